// y[i] = f(x[i]) over n elements. The header defines WG (threads per workgroup) and OP:
// 0 copy, 1 scale (3x), 2 SiLU, 3 GELU (tanh approximation). One element per thread;
// the grid is 2-D when n / WG exceeds the per-dimension workgroup limit.

struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const SQRT_2_OVER_PI: f32 = 0.7978845608028654;
const GELU_CUBIC: f32 = 0.044715;

fn gelu(v: f32) -> f32 {
    let z = SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v);
    // 0.5 v (1 + tanh z) = v e / (1 + e) with e = exp(2z), written with exp(-2|z|) so
    // that neither branch overflows nor cancels.
    let e = exp(-2.0 * abs(z));
    if (z >= 0.0) {
        return v / (1.0 + e);
    }
    return v * e / (1.0 + e);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i >= p.n) {
        return;
    }
    let v = x[i];
    if (OP == 0u) {
        y[i] = v;
    } else if (OP == 1u) {
        y[i] = 3.0 * v;
    } else if (OP == 2u) {
        y[i] = v / (1.0 + exp(-v));
    } else {
        y[i] = gelu(v);
    }
}
