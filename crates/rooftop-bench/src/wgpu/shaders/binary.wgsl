// out[i] = f(a[i], b[i]) over n elements. Header: WG, OP (0 add: a + b; 1 triad: a + 3b).

struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i >= p.n) {
        return;
    }
    if (OP == 0u) {
        out[i] = a[i] + b[i];
    } else {
        out[i] = a[i] + 3.0 * b[i];
    }
}
