// y[N] = W[N x K] x[K] with W in int4, affine symmetric: w = (q - 8) * scale, one fp16
// scale per group of 128 weights along K (the suite's `qmatvec` layout: rows of K
// weights, two per byte, weight 2i in the low nibble of byte i; scales N x K/128).
// WGSL has no 8- or 16-bit storage types without extensions: the u8 weights are read
// as little-endian u32 words and the f16 scales as pairs with unpack2x16float.
// ABI (docs/spec.md): buffers at @binding(0..3), the scalars' uniform struct at 4;
// one invocation per output row, BLOCK_X per workgroup (a pipeline constant the wgpu
// backend sets from the spec's `block`, so --autotune sweeps 64, 128 and 256).
struct Params {
    N: u32,
    K: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> qweight: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

const GROUP: u32 = 128u;

fn weight_byte(i: u32) -> u32 {
    return (qweight[i / 4u] >> (8u * (i % 4u))) & 0xffu;
}

fn scale(i: u32) -> f32 {
    return unpack2x16float(scales[i / 2u])[i % 2u];
}

override BLOCK_X: u32 = 64;

@compute @workgroup_size(BLOCK_X, 1, 1)
fn int4_matvec(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= p.N) {
        return;
    }
    let groups = p.K / GROUP;
    let row_byte = row * (p.K / 2u);
    var acc = 0.0;
    for (var g = 0u; g < groups; g = g + 1u) {
        let s = scale(row * groups + g);
        var part = 0.0;
        for (var i = 0u; i < GROUP; i = i + 2u) {
            let col = g * GROUP + i;
            let q = weight_byte(row_byte + col / 2u);
            part = part + (f32(q & 0xfu) - 8.0) * x[col] + (f32(q >> 4u) - 8.0) * x[col + 1u];
        }
        acc = acc + s * part;
    }
    y[row] = acc;
}
