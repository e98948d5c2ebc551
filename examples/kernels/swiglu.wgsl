// SwiGLU: y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). One thread per
// element; the workgroup size follows the spec's `block` (override BLOCK_X).
override BLOCK_X: u32 = 256u;

struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(BLOCK_X, 1, 1)
fn swiglu(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= p.n) {
        return;
    }
    let g = gate[i];
    y[i] = g / (1.0 + exp(-g)) * up[i];
}
