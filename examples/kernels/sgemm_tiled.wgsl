// Tiled SGEMM: C[M x N] = A[M x K] B[K x N], row-major fp32. Each 16 x 16 workgroup
// computes a 16 x 16 tile of C, staging tiles of A and B in workgroup memory.
// ABI (docs/spec.md): buffers at @binding(0..2), the scalars' uniform struct at 3.
// block must be [16, 16, 1].
struct Params {
    M: u32,
    N: u32,
    K: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const TILE: u32 = 16u;
var<workgroup> as_: array<f32, 256>;
var<workgroup> bs_: array<f32, 256>;

@compute @workgroup_size(16, 16, 1)
fn sgemm_tiled(@builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let col = wid.x * TILE + tx;
    let row = wid.y * TILE + ty;
    var acc = 0.0;
    // The loop bound is uniform (p.K), so the barriers are in uniform control flow;
    // out-of-range elements load as 0.
    for (var t = 0u; t < p.K; t = t + TILE) {
        var av = 0.0;
        if (row < p.M && t + tx < p.K) {
            av = a[row * p.K + t + tx];
        }
        var bv = 0.0;
        if (col < p.N && t + ty < p.K) {
            bv = b[(t + ty) * p.N + col];
        }
        as_[ty * TILE + tx] = av;
        bs_[ty * TILE + tx] = bv;
        workgroupBarrier();
        for (var i = 0u; i < TILE; i = i + 1u) {
            acc = acc + as_[ty * TILE + i] * bs_[i * TILE + tx];
        }
        workgroupBarrier();
    }
    if (row < p.M && col < p.N) {
        c[row * p.N + col] = acc;
    }
}
