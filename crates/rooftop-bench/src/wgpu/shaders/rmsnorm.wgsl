// RMSNorm over rows: y = x / sqrt(mean(x^2) + eps) * w. One workgroup per row; the sum
// of squares is reduced in workgroup memory, then every thread scales its elements.
// Header: WG (a power of two).

struct Params { rows: u32, cols: u32, eps: f32, _p0: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> part: array<f32, WG>;

fn reduce_sum(lid: u32, v: f32) -> f32 {
    part[lid] = v;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            part[lid] += part[lid + h];
        }
        workgroupBarrier();
    }
    let total = part[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let valid = row < p.rows;
    let base = row * p.cols;
    var s = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            let v = x[base + c];
            s += v * v;
        }
    }
    let ss = reduce_sum(lid, s);
    let r = inverseSqrt(ss / f32(p.cols) + p.eps);
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            y[base + c] = x[base + c] * r * w[c];
        }
    }
}
