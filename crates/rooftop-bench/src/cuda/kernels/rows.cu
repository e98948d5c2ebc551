// Row kernels of suite/norm.rs, softmax.rs and reduce.rs: one block per row (rows
// beyond the grid in a block-stride loop), blockDim.x a multiple of 32.

template <typename T>
__device__ void k_rmsnorm(const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T ss = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) ss += xr[c] * xr[c];
        ss = block_sum(ss, sh);
        const T rs = T(1) / d_sqrt(ss / T(cols) + T(1e-5));
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = xr[c] * rs * w[c];
    }
}

template <typename T>
__device__ void k_layernorm(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b, T *__restrict__ y,
                            u64 rows, u64 cols) {
    __shared__ T sh[32];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T s = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
        const T mean = block_sum(s, sh) / T(cols);
        T v = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const T d = xr[c] - mean;
            v += d * d;
        }
        const T var = block_sum(v, sh) / T(cols);
        const T rs = T(1) / d_sqrt(var + T(1e-5));
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = (xr[c] - mean) * rs * w[c] + b[c];
    }
}

template <typename T> __device__ void k_softmax(const T *__restrict__ x, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T m = neg_inf<T>();
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) m = d_max(m, xr[c]);
        m = block_max(m, sh);
        T s = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += d_exp(xr[c] - m);
        s = block_sum(s, sh);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = d_exp(xr[c] - m) / s;
    }
}

// Online softmax (Milakov & Gimelshein 2018): each thread keeps a running (max, sum)
// in one pass; the block combines them, then a second pass normalises.
template <typename T> __device__ __forceinline__ void combine(T &m, T &s, T m2, T s2) {
    const T mm = d_max(m, m2);
    const T a = (s == T(0)) ? T(0) : s * d_exp(m - mm);
    const T b = (s2 == T(0)) ? T(0) : s2 * d_exp(m2 - mm);
    m = mm;
    s = a + b;
}

template <typename T>
__device__ void k_softmax_online(const T *__restrict__ x, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T shm[32];
    __shared__ T shs[32];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T m = neg_inf<T>(), s = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const T v = xr[c];
            if (v > m) {
                s = s * d_exp(m - v) + T(1);
                m = v;
            } else {
                s += d_exp(v - m);
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            const T m2 = __shfl_xor_sync(0xffffffffu, m, o);
            const T s2 = __shfl_xor_sync(0xffffffffu, s, o);
            combine(m, s, m2, s2);
        }
        const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
        if (lane == 0) {
            shm[w] = m;
            shs[w] = s;
        }
        __syncthreads();
        if (w == 0) {
            const bool have = threadIdx.x < (blockDim.x >> 5);
            m = have ? shm[threadIdx.x] : neg_inf<T>();
            s = have ? shs[threadIdx.x] : T(0);
            for (int o = 16; o > 0; o >>= 1) {
                const T m2 = __shfl_xor_sync(0xffffffffu, m, o);
                const T s2 = __shfl_xor_sync(0xffffffffu, s, o);
                combine(m, s, m2, s2);
            }
            if (threadIdx.x == 0) {
                shm[0] = m;
                shs[0] = s;
            }
        }
        __syncthreads();
        m = shm[0];
        s = shs[0];
        __syncthreads();
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = d_exp(xr[c] - m) / s;
    }
}

template <typename T> __device__ void k_rowsum(const T *__restrict__ x, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T s = T(0);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
        s = block_sum(s, sh);
        if (threadIdx.x == 0) y[r] = s;
    }
}

#define ROW_EXPORTS(T, S)                                                                             \
    extern "C" __global__ void rt_rmsnorm_##S(const T *x, const T *w, T *y, u64 rows, u64 cols) {     \
        k_rmsnorm<T>(x, w, y, rows, cols);                                                              \
    }                                                                                                   \
    extern "C" __global__ void rt_layernorm_##S(const T *x, const T *w, const T *b, T *y, u64 rows,     \
                                                u64 cols) {                                             \
        k_layernorm<T>(x, w, b, y, rows, cols);                                                         \
    }                                                                                                   \
    extern "C" __global__ void rt_softmax_##S(const T *x, T *y, u64 rows, u64 cols) {                   \
        k_softmax<T>(x, y, rows, cols);                                                                 \
    }                                                                                                   \
    extern "C" __global__ void rt_softmax_online_##S(const T *x, T *y, u64 rows, u64 cols) {            \
        k_softmax_online<T>(x, y, rows, cols);                                                          \
    }                                                                                                   \
    extern "C" __global__ void rt_rowsum_##S(const T *x, T *y, u64 rows, u64 cols) {                    \
        k_rowsum<T>(x, y, rows, cols);                                                                  \
    }

ROW_EXPORTS(float, f32)
ROW_EXPORTS(double, f64)
