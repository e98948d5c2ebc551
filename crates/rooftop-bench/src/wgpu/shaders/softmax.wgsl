// Row softmax, one workgroup per row. `three_pass`: the row's maximum, the sum of
// exp(x - max), then exp(x - max) / sum. `online`: each thread keeps a running maximum
// and a running sum rescaled when its maximum grows (Milakov & Gimelshein 2018); the
// threads' (max, sum) pairs are merged in workgroup memory, then the normalising pass.
// Header: WG (a power of two).

struct Params { rows: u32, cols: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> pm: array<f32, WG>;
var<workgroup> ps: array<f32, WG>;

const NEG_INF: f32 = -3.4028235e38;

fn reduce_max(lid: u32, v: f32) -> f32 {
    pm[lid] = v;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            pm[lid] = max(pm[lid], pm[lid + h]);
        }
        workgroupBarrier();
    }
    let m = pm[0];
    workgroupBarrier();
    return m;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
    ps[lid] = v;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            ps[lid] += ps[lid + h];
        }
        workgroupBarrier();
    }
    let s = ps[0];
    workgroupBarrier();
    return s;
}

fn row_of(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y * nwg.x + wid.x;
}

@compute @workgroup_size(WG)
fn three_pass(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg);
    let valid = row < p.rows;
    let base = row * p.cols;
    var m = NEG_INF;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            m = max(m, x[base + c]);
        }
    }
    let rm = reduce_max(lid, m);
    var s = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            s += exp(x[base + c] - rm);
        }
    }
    let inv = 1.0 / reduce_sum(lid, s);
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            y[base + c] = exp(x[base + c] - rm) * inv;
        }
    }
}

@compute @workgroup_size(WG)
fn online(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg);
    let valid = row < p.rows;
    let base = row * p.cols;
    var m = NEG_INF;
    var s = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            let v = x[base + c];
            if (v > m) {
                s = s * exp(m - v) + 1.0;
                m = v;
            } else {
                s += exp(v - m);
            }
        }
    }
    // Merge the threads' (max, sum) pairs: the sums are rescaled to the larger maximum.
    pm[lid] = m;
    ps[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            let m1 = pm[lid];
            let m2 = pm[lid + h];
            let mm = max(m1, m2);
            ps[lid] = ps[lid] * exp(m1 - mm) + ps[lid + h] * exp(m2 - mm);
            pm[lid] = mm;
        }
        workgroupBarrier();
    }
    let rm = pm[0];
    let inv = 1.0 / ps[0];
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            y[base + c] = exp(x[base + c] - rm) * inv;
        }
    }
}
