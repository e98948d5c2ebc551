// Weight-quantized y = W x (qmatvec) and Y = X W^T (qgemm): one workgroup per output
// element, its threads strided over the 32-bit words of the weight row, reduced in
// workgroup memory. Layouts are the suite's (suite/quant.rs): quants row after row,
// fp16 scales (two per u32, element 2i in the low half), zero points packed at the
// weight's bits. The header defines WG, BITS (4 or 8), GROUP, GGML (Q4_0 nibble order),
// SIGNED (Q8_0 signed bytes), the bindings x, qw, sc, y, p and `zero_point(g)`.

var<workgroup> part: array<f32, WG>;

fn scale(g: u32) -> f32 {
    let pair = unpack2x16float(sc[g / 2u]);
    return select(pair.x, pair.y, (g & 1u) == 1u);
}

// Sum over the weights of one 32-bit word of (q - zero) * x[col], and the word's scale
// group; `xrow` is the offset of the activation row, `j` the weight row.
fn word_dot(j: u32, w: u32, xrow: u32) -> f32 {
    let wpr = p.k * BITS / 32u;
    let word = qw[j * wpr + w];
    let per_word = 32u / BITS;
    let col0 = w * per_word;
    let g = j * (p.k / GROUP) + col0 / GROUP;
    let z = zero_point(g);
    var s = 0.0;
    if (BITS == 8u) {
        for (var t = 0u; t < 4u; t++) {
            var q: f32;
            if (SIGNED) {
                q = f32(extractBits(bitcast<i32>(word), 8u * t, 8u));
            } else {
                q = f32(extractBits(word, 8u * t, 8u));
            }
            s += (q - z) * x[xrow + col0 + t];
        }
    } else if (GGML) {
        // ggml Q4_0: in a 32-weight block (4 words), byte i holds weight i (low nibble)
        // and weight i + 16 (high nibble).
        let block = w / 4u;
        let first = block * 32u + (w % 4u) * 4u;
        for (var t = 0u; t < 4u; t++) {
            let byte = extractBits(word, 8u * t, 8u);
            let lo = f32(byte & 15u);
            let hi = f32(byte >> 4u);
            s += (lo - z) * x[xrow + first + t] + (hi - z) * x[xrow + first + t + 16u];
        }
    } else {
        for (var t = 0u; t < 8u; t++) {
            let q = f32(extractBits(word, 4u * t, 4u));
            s += (q - z) * x[xrow + col0 + t];
        }
    }
    return s * scale(g);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let out = wid.y * nwg.x + wid.x;
    let valid = out < p.m * p.n;
    let i = out / p.n;
    let j = out % p.n;
    let wpr = p.k * BITS / 32u;
    var s = 0.0;
    if (valid) {
        for (var w = lid; w < wpr; w += WG) {
            s += word_dot(j, w, i * p.k);
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
        y[out] = part[0];
    }
}
