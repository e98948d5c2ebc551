// y[r] = sum of row r of a rows x cols matrix: one workgroup per row, its threads
// strided along the row, reduced in workgroup memory. Header: WG (a power of two).

struct Params { rows: u32, cols: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let valid = row < p.rows;
    let base = row * p.cols;
    var s = 0.0;
    if (valid) {
        for (var c = lid; c < p.cols; c += WG) {
            s += x[base + c];
        }
    }
    part[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            part[lid] += part[lid + h];
        }
        workgroupBarrier();
    }
    if (valid && lid == 0u) {
        y[row] = part[0];
    }
}
