// One-dimensional kernels of suite/stream.rs, grid-stride loops over n elements.
// Buffers in the suite's order; `n` last.

template <typename T> __device__ void k_read(const T *__restrict__ a, T *sum, T *partials, u32 *counter, u64 n) {
    __shared__ T sh[32];
    __shared__ bool last;
    T acc = T(0);
    GRID_STRIDE(i, n) acc += a[i];
    T s = block_sum(acc, sh);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        // The last block to finish adds the per-block sums and re-arms the counter, so
        // one launch computes the whole sum and launches can follow back to back.
        T v = T(0);
        for (u32 i = threadIdx.x; i < gridDim.x; i += blockDim.x) v += ((volatile T *)partials)[i];
        v = block_sum(v, sh);
        if (threadIdx.x == 0) {
            *sum = v;
            *counter = 0;
        }
    }
}

template <typename T> __device__ void k_write(T *__restrict__ out, u64 n) {
    GRID_STRIDE(i, n) out[i] = T(2.5);
}

template <typename T> __device__ void k_copy(const T *__restrict__ a, T *__restrict__ b, u64 n) {
    GRID_STRIDE(i, n) b[i] = a[i];
}

template <typename T> __device__ void k_scale(const T *__restrict__ a, T *__restrict__ b, u64 n) {
    GRID_STRIDE(i, n) b[i] = T(3) * a[i];
}

template <typename T>
__device__ void k_add(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ c, u64 n) {
    GRID_STRIDE(i, n) c[i] = a[i] + b[i];
}

// Suite order: b, c (inputs), a (output); a = b + 3c.
template <typename T>
__device__ void k_triad(const T *__restrict__ b, const T *__restrict__ c, T *__restrict__ a, u64 n) {
    GRID_STRIDE(i, n) a[i] = b[i] + T(3) * c[i];
}

template <typename T> __device__ void k_silu(const T *__restrict__ x, T *__restrict__ y, u64 n) {
    GRID_STRIDE(i, n) {
        const T v = x[i];
        y[i] = v / (T(1) + d_exp(-v));
    }
}

// tanh approximation; for z < 0, 1 + tanh z = 2e^2z / (1 + e^2z) avoids the
// cancellation (as the reference does).
template <typename T> __device__ void k_gelu(const T *__restrict__ x, T *__restrict__ y, u64 n) {
    GRID_STRIDE(i, n) {
        const T v = x[i];
        const T z = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
        if (z >= T(0)) {
            y[i] = T(0.5) * v * (T(1) + d_tanh(z));
        } else {
            const T e = d_exp(T(2) * z);
            y[i] = v * e / (T(1) + e);
        }
    }
}

#define STREAM_EXPORTS(T, S)                                                                          \
    extern "C" __global__ void rt_read_##S(const T *a, T *sum, T *partials, u32 *counter, u64 n) {      \
        k_read<T>(a, sum, partials, counter, n);                                                        \
    }                                                                                                   \
    extern "C" __global__ void rt_write_##S(T *out, u64 n) { k_write<T>(out, n); }                      \
    extern "C" __global__ void rt_copy_##S(const T *a, T *b, u64 n) { k_copy<T>(a, b, n); }             \
    extern "C" __global__ void rt_scale_##S(const T *a, T *b, u64 n) { k_scale<T>(a, b, n); }           \
    extern "C" __global__ void rt_add_##S(const T *a, const T *b, T *c, u64 n) { k_add<T>(a, b, c, n); } \
    extern "C" __global__ void rt_triad_##S(const T *b, const T *c, T *a, u64 n) {                      \
        k_triad<T>(b, c, a, n);                                                                         \
    }                                                                                                   \
    extern "C" __global__ void rt_silu_##S(const T *x, T *y, u64 n) { k_silu<T>(x, y, n); }             \
    extern "C" __global__ void rt_gelu_##S(const T *x, T *y, u64 n) { k_gelu<T>(x, y, n); }

STREAM_EXPORTS(float, f32)
STREAM_EXPORTS(double, f64)
