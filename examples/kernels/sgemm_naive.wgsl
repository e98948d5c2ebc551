// Naive SGEMM: C[M x N] = A[M x K] B[K x N], row-major fp32, one invocation per element
// of C. ABI (docs/spec.md): buffers at @binding(0..2) in spec order, the scalars in one
// uniform struct at the next binding. The workgroup size comes from the BLOCK_X and
// BLOCK_Y pipeline constants, which the wgpu backend sets from the spec's `block`, so
// --autotune sweeps all three blocks (as the CUDA version does).
struct Params {
    M: u32,
    N: u32,
    K: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override BLOCK_X: u32 = 16;
override BLOCK_Y: u32 = 16;

@compute @workgroup_size(BLOCK_X, BLOCK_Y, 1)
fn sgemm_naive(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let row = gid.y;
    if (row >= p.M || col >= p.N) {
        return;
    }
    var acc = 0.0;
    for (var i = 0u; i < p.K; i = i + 1u) {
        acc = acc + a[row * p.K + i] * b[i * p.N + col];
    }
    c[row * p.N + col] = acc;
}
