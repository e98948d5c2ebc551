// Weight-quantized products of suite/quant.rs: qmatvec y[n] = W[n x k] x[k] and
// qgemm Y[m x n] = X[m x k] W^T, fp32 activations and accumulation. The layout
// arguments say how to decode a weight (suite/quant.rs QuantLayout):
//   bits 4|8; group (weights per fp16 scale along k); zp (zero points in qzeros, packed
//   at the weight's bits); ggml (Q4_0 nibble order: byte j of a 32-weight block holds
//   weight j low and j+16 high; else weight 2i low, 2i+1 high); sgn (Q8_0: signed
//   bytes, no offset). Implicit zero: 8 (4-bit) or 128 (8-bit).

struct QL {
    u32 bits, group, zp, ggml, sgn;
};

__device__ __forceinline__ float qweight(const u8 *__restrict__ q, const u16 *__restrict__ scales,
                                         const u8 *__restrict__ zeros, QL l, u64 k, u64 row, u64 col) {
    const u64 g = row * (k / l.group) + col / l.group;
    const float s = f16_to_f32(scales[g]);
    const u64 idx = row * k + col;
    float qv, z;
    if (l.sgn) {
        qv = (float)(i8)q[idx];
        z = 0.f;
    } else if (l.bits == 4) {
        u32 v;
        if (l.ggml) {
            const u64 block = idx / 32;
            const u32 j = (u32)(idx % 32);
            const u8 b = q[block * 16 + (j % 16)];
            v = j < 16 ? (b & 15u) : (u32)(b >> 4);
        } else {
            const u8 b = q[idx / 2];
            v = (idx & 1) ? (u32)(b >> 4) : (b & 15u);
        }
        u32 zz = 8;
        if (l.zp) {
            const u8 b = zeros[g / 2];
            zz = (g & 1) ? (u32)(b >> 4) : (b & 15u);
        }
        qv = (float)v;
        z = (float)zz;
    } else {
        qv = (float)q[idx];
        z = l.zp ? (float)zeros[g] : 128.f;
    }
    return (qv - z) * s;
}

// One warp per output row; each lane takes chunks of 8 consecutive weights.
extern "C" __global__ void rt_qmatvec(const float *__restrict__ x, const u8 *__restrict__ q, const u16 *__restrict__ scales,
                                      const u8 *__restrict__ zeros, float *__restrict__ y, u32 n, u32 k, u32 bits,
                                      u32 group, u32 zp, u32 ggml, u32 sgn) {
    const QL l = {bits, group, zp, ggml, sgn};
    const u32 warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    for (u64 row = (u64)blockIdx.x * warps + (threadIdx.x >> 5); row < n; row += (u64)gridDim.x * warps) {
        float acc = 0.f;
        for (u64 c0 = (u64)lane * 8; c0 < k; c0 += 256) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const u64 c = c0 + j;
                if (c < k) acc = fmaf(x[c], qweight(q, scales, zeros, l, k, row, c), acc);
            }
        }
        acc = warp_sum(acc);
        if (lane == 0) y[row] = acc;
    }
}

// 64 x 64 tiles of Y per 256-thread block, 32-deep slices of X and of the decoded
// weights in shared memory, 4 x 4 outputs per thread.
extern "C" __global__ void __launch_bounds__(256) rt_qgemm(const float *__restrict__ X, const u8 *__restrict__ q, const u16 *__restrict__ scales,
             const u8 *__restrict__ zeros, float *__restrict__ Y, u32 m, u32 n, u32 k, u32 bits, u32 group, u32 zp,
             u32 ggml, u32 sgn) {
    constexpr int BM = 64, BN = 64, BK = 32, TM = 4, TN = 4, TX = BN / TN, TY = BM / TM;
    const QL l = {bits, group, zp, ggml, sgn};
    __shared__ float Xs[BK][BM + 1];
    __shared__ float Ws[BK][BN + 1];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const u64 row0 = (u64)blockIdx.y * BM, col0 = (u64)blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    for (u32 k0 = 0; k0 < k; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 256) {
            const int r = e / BK, c = e % BK;
            const u64 gr = row0 + r, gc = (u64)k0 + c;
            Xs[c][r] = (gr < m && gc < k) ? X[gr * k + gc] : 0.f;
        }
        for (int e = tid; e < BN * BK; e += 256) {
            const int r = e / BK, c = e % BK;
            const u64 gr = col0 + r, gc = (u64)k0 + c;
            Ws[c][r] = (gr < n && gc < k) ? qweight(q, scales, zeros, l, k, gr, gc) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = Xs[kk][ty + i * TY];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Ws[kk][tx + j * TX];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const u64 r = row0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const u64 c = col0 + tx + j * TX;
            if (r < m && c < n) Y[r * n + c] = acc[i][j];
        }
    }
}
