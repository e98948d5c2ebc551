// Probes: the FMA throughput kernel of suite/fma.rs and the pointer chase of
// suite/probe.rs, plus the cache flush.

// x = x * a + b, `iters` times, one chain per thread (vector: every lane; scalar: lane 0
// of each warp only, the GPU analogue of one SIMD lane).
template <typename T>
__device__ void k_fma(const T *__restrict__ x0, const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ acc,
                      u32 nacc, u32 iters, u32 scalar) {
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 idx = tid;
    if (scalar) {
        if (threadIdx.x & 31) return;
        idx = tid >> 5;
    }
    if (idx >= nacc) return;
    T x = x0[idx];
    const T av = a[0], bv = b[0];
#pragma unroll 32
    for (u32 i = 0; i < iters; ++i) x = d_fma(x, av, bv);
    acc[idx] = x;
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
