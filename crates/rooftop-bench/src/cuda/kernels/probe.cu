// Probes: the FMA throughput kernel of suite/fma.rs and the pointer chase of
// suite/probe.rs, plus the cache flush.

// x = x * a + b, `iters` times. Vector: FMA_CHAINS accumulators per thread (at idx,
// idx + nacc/FMA_CHAINS, ...), independent chains a warp issues back to back; scalar: lane
// 0 of each warp runs one chain (the GPU analogue of one SIMD lane). `nacc` is a multiple
// of FMA_CHAINS (the plan checks).
#define FMA_CHAINS 4
template <typename T>
__device__ void k_fma(const T *__restrict__ x0, const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ acc,
                      u32 nacc, u32 iters, u32 scalar) {
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const T av = a[0], bv = b[0];
    if (scalar) {
        if (threadIdx.x & 31) return;
        const u64 idx = tid >> 5;
        if (idx >= nacc) return;
        T x = x0[idx];
#pragma unroll 32
        for (u32 i = 0; i < iters; ++i) x = d_fma(x, av, bv);
        acc[idx] = x;
        return;
    }
    const u64 stride = nacc / FMA_CHAINS;
    if (tid >= stride) return;
    T x[FMA_CHAINS];
#pragma unroll
    for (int j = 0; j < FMA_CHAINS; ++j) x[j] = x0[tid + j * stride];
#pragma unroll 8
    for (u32 i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < FMA_CHAINS; ++j) x[j] = d_fma(x[j], av, bv);
    }
#pragma unroll
    for (int j = 0; j < FMA_CHAINS; ++j) acc[tid + j * stride] = x[j];
}

extern "C" __global__ void rt_fma_f32(const float *x0, const float *a, const float *b, float *acc, u32 nacc, u32 iters,
                                      u32 scalar) {
    k_fma<float>(x0, a, b, acc, nacc, iters, scalar);
}

extern "C" __global__ void rt_fma_f64(const double *x0, const double *a, const double *b, double *acc, u32 nacc,
                                      u32 iters, u32 scalar) {
    k_fma<double>(x0, a, b, acc, nacc, iters, scalar);
}

// One thread follows `steps` dependent loads.
extern "C" __global__ void rt_chase(const u32 *__restrict__ next, u32 *__restrict__ last, u64 steps) {
    u32 cur = 0;
    for (u64 s = 0; s < steps; ++s) cur = next[cur];
    *last = cur;
}

// Writes every word of a buffer larger than the L2, evicting the kernel's lines.
extern "C" __global__ void rt_flush(u32 *buf, u64 n, u32 salt) {
    GRID_STRIDE(i, n) buf[i] = salt + (u32)i;
}
