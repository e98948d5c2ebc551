// Row-major C[m x n] = A[m x k] . B[k x n], tiled: a workgroup of 16 x 16 threads
// computes a 64 x 64 block of C, each thread a 4 x 4 micro-tile, staging 64 x 16 panels of
// A and 16 x 64 panels of B in workgroup memory (8 KiB). Edges are guarded (out-of-range
// loads read 0, out-of-range stores are skipped), so any m, n, k works.
//
// `Elem`, the type in memory, comes from the plan's header: `alias Elem = f32;` for the
// suite's `gemm`, or `enable f16; alias Elem = f16;` for `hgemm` (SHADER_F16). Panels are
// widened to f32 as they are staged and the sums are f32; each result is rounded to
// `Elem` once, when stored.

struct Params { m: u32, n: u32, k: u32, _p0: u32 }

@group(0) @binding(0) var<storage, read> a: array<Elem>;
@group(0) @binding(1) var<storage, read> b: array<Elem>;
@group(0) @binding(2) var<storage, read_write> c: array<Elem>;
@group(0) @binding(3) var<uniform> p: Params;

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

// As[kk * BM + mm], Bs[kk * BN + nn]
var<workgroup> As: array<f32, 1024>;
var<workgroup> Bs: array<f32, 1024>;

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let tr = lid.y * 4u;
    let tc = lid.x * 4u;
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var t = 0u; t < 4u; t++) {
            let idx = li + 256u * t;
            // A panel: consecutive threads read consecutive k of one row.
            let mm = idx / BK;
            let ka = idx % BK;
            let ra = row0 + mm;
            let ca = k0 + ka;
            var va = 0.0;
            if (ra < p.m && ca < p.k) {
                va = f32(a[ra * p.k + ca]);
            }
            As[ka * BM + mm] = va;
            // B panel: consecutive threads read consecutive columns of one row.
            let nn = idx % BN;
            let kb = idx / BN;
            let rb = k0 + kb;
            let cb = col0 + nn;
            var vb = 0.0;
            if (rb < p.k && cb < p.n) {
                vb = f32(b[rb * p.n + cb]);
            }
            Bs[kb * BN + nn] = vb;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let o = kk * BN + tc;
            let bv = vec4<f32>(Bs[o], Bs[o + 1u], Bs[o + 2u], Bs[o + 3u]);
            let ao = kk * BM + tr;
            acc0 = fma(vec4<f32>(As[ao]), bv, acc0);
            acc1 = fma(vec4<f32>(As[ao + 1u]), bv, acc1);
            acc2 = fma(vec4<f32>(As[ao + 2u]), bv, acc2);
            acc3 = fma(vec4<f32>(As[ao + 3u]), bv, acc3);
        }
        workgroupBarrier();
    }
    let accs = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + tr + i;
        if (r < p.m) {
            for (var j = 0u; j < 4u; j++) {
                let col = col0 + tc + j;
                if (col < p.n) {
                    c[r * p.n + col] = Elem(accs[i][j]);
                }
            }
        }
    }
}
