// FMA peak probe: every accumulator runs x <- fma(x, a, b) `iters` times. `scalar`: one
// accumulator per thread; `vector`: four per thread as one vec4 (four independent chains,
// which hides the FMA latency). The loops are unrolled by 8 (the compiler cannot fold
// the recurrence: a, b and iters come from buffers). Header: WG.

struct Params { iters: u32, count: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<storage, read> x0: array<f32>;
@group(0) @binding(1) var<storage, read> av: array<f32>;
@group(0) @binding(2) var<storage, read> bv: array<f32>;
@group(0) @binding(3) var<storage, read_write> acc: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn scalar(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.count) {
        return;
    }
    let a = av[0];
    let b = bv[0];
    var v = x0[i];
    let blocks = p.iters / 8u;
    for (var r = 0u; r < blocks; r++) {
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
    }
    for (var r = blocks * 8u; r < p.iters; r++) {
        v = fma(v, a, b);
    }
    acc[i] = v;
}

@compute @workgroup_size(WG)
fn vector(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x * 4u;
    if (i + 3u >= p.count) {
        return;
    }
    let a = vec4<f32>(av[0]);
    let b = vec4<f32>(bv[0]);
    var v = vec4<f32>(x0[i], x0[i + 1u], x0[i + 2u], x0[i + 3u]);
    let blocks = p.iters / 8u;
    for (var r = 0u; r < blocks; r++) {
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
        v = fma(v, a, b);
    }
    for (var r = blocks * 8u; r < p.iters; r++) {
        v = fma(v, a, b);
    }
    acc[i] = v.x;
    acc[i + 1u] = v.y;
    acc[i + 2u] = v.z;
    acc[i + 3u] = v.w;
}
