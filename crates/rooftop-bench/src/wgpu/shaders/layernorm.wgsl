// LayerNorm over rows: y = (x - mean) / sqrt(var + eps) * w + b, biased variance computed
// in a second pass over the row (x - mean, no cancellation). One workgroup per row.
// Header: WG (a power of two).

struct Params { rows: u32, cols: u32, eps: f32, _p0: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

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
    let d = f32(p.cols);
    var s = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            s += x[base + c];
        }
    }
    let mean = reduce_sum(lid, s) / d;
    var q = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            let v = x[base + c] - mean;
            q += v * v;
        }
    }
    let r = inverseSqrt(reduce_sum(lid, q) / d + p.eps);
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            y[base + c] = (x[base + c] - mean) * r * w[c] + b[c];
        }
    }
}
