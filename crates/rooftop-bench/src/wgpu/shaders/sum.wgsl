// Strided sum: workgroup g of `groups` sums src[i] for i = g*WG + t + j*groups*WG (its
// threads t in parallel, sequentially over j), reduces its threads in workgroup memory
// and writes dst[g]. The `read` kernel runs it twice: G workgroups over the input into G
// partial sums, then one workgroup over the partials into the result. Header: WG (a
// power of two).

struct Params { n: u32, groups: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    let stride = p.groups * WG;
    for (var i = wid.x * WG + lid; i < p.n; i += stride) {
        s += src[i];
    }
    part[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (lid < h) {
            part[lid] += part[lid + h];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        dst[wid.x] = part[0];
    }
}
