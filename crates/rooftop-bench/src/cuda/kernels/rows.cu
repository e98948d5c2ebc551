// Row kernels of suite/norm.rs, softmax.rs and reduce.rs: one block per row (rows
// beyond the grid in a block-stride loop), blockDim.x a multiple of 32.
//
// rmsnorm, layernorm and softmax keep a row in registers (up to ROW_PACKS 16-byte packs
// per thread, all loaded before the first use) when its length is a multiple of a pack
// and it fits: the row is read from memory once, whatever the passes over it. Other
// rows take the plain loops, which re-read the row (from cache, mostly).

#define ROW_PACKS 8

// The cached path applies: rows of whole packs that fit, every pointer 16-byte aligned.
template <typename T>
__device__ __forceinline__ bool row_fits(u64 cols, const void *a, const void *b, const void *c, const void *d) {
    constexpr int P = 16 / sizeof(T);
    return cols % P == 0 && cols / P <= (u64)ROW_PACKS * blockDim.x && aligned16(a, b, c) && aligned16(d);
}

// Loads this thread's packs of a row of np packs.
template <typename T> __device__ __forceinline__ void row_load(Pack<T> (&v)[ROW_PACKS], const T *xr, u64 np) {
    const Pack<T> *q = (const Pack<T> *)xr;
#pragma unroll
    for (int u = 0; u < ROW_PACKS; ++u) {
        const u64 c = threadIdx.x + (u64)u * blockDim.x;
        if (c < np) v[u] = q[c];
    }
}

// for each element e of pack u held by this thread (c: the pack's index in the row).
#define FOR_HELD(np, BODY)                                                                              \
    _Pragma("unroll") for (int u = 0; u < ROW_PACKS; ++u) {                                             \
        const u64 c = threadIdx.x + (u64)u * blockDim.x;                                                \
        if (c < (np)) {                                                                                 \
            _Pragma("unroll") for (int e = 0; e < (int)(16 / sizeof(T)); ++e) { BODY; }                 \
        }                                                                                               \
    }

template <typename T>
__device__ void rmsnorm_held(const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    const u64 np = cols / (16 / sizeof(T));
    const Pack<T> *wp = (const Pack<T> *)w;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        Pack<T> v[ROW_PACKS];
        row_load(v, x + r * cols, np);
        T ss = T(0);
        FOR_HELD(np, ss += v[u].v[e] * v[u].v[e]);
        ss = block_sum(ss, sh);
        const T rs = T(1) / d_sqrt(ss / T(cols) + T(1e-5));
        Pack<T> *yr = (Pack<T> *)(y + r * cols);
        _Pragma("unroll") for (int u = 0; u < ROW_PACKS; ++u) {
            const u64 c = threadIdx.x + (u64)u * blockDim.x;
            if (c < np) {
                const Pack<T> wv = wp[c];
                Pack<T> o;
                _Pragma("unroll") for (int e = 0; e < (int)(16 / sizeof(T)); ++e) o.v[e] = v[u].v[e] * rs * wv.v[e];
                yr[c] = o;
            }
        }
    }
}

template <typename T>
__device__ void layernorm_held(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b,
                               T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    const u64 np = cols / (16 / sizeof(T));
    const Pack<T> *wp = (const Pack<T> *)w;
    const Pack<T> *bp = (const Pack<T> *)b;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        Pack<T> v[ROW_PACKS];
        row_load(v, x + r * cols, np);
        T s = T(0);
        FOR_HELD(np, s += v[u].v[e]);
        const T mean = block_sum(s, sh) / T(cols);
        T q = T(0);
        FOR_HELD(np, const T d = v[u].v[e] - mean; q += d * d);
        const T var = block_sum(q, sh) / T(cols);
        const T rs = T(1) / d_sqrt(var + T(1e-5));
        Pack<T> *yr = (Pack<T> *)(y + r * cols);
        _Pragma("unroll") for (int u = 0; u < ROW_PACKS; ++u) {
            const u64 c = threadIdx.x + (u64)u * blockDim.x;
            if (c < np) {
                const Pack<T> wv = wp[c], bv = bp[c];
                Pack<T> o;
                _Pragma("unroll") for (int e = 0; e < (int)(16 / sizeof(T)); ++e) o.v[e] =
                    (v[u].v[e] - mean) * rs * wv.v[e] + bv.v[e];
                yr[c] = o;
            }
        }
    }
}

template <typename T> __device__ void softmax_held(const T *__restrict__ x, T *__restrict__ y, u64 rows, u64 cols) {
    __shared__ T sh[32];
    const u64 np = cols / (16 / sizeof(T));
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        Pack<T> v[ROW_PACKS];
        row_load(v, x + r * cols, np);
        T m = neg_inf<T>();
        FOR_HELD(np, m = d_max(m, v[u].v[e]));
        m = block_max(m, sh);
        T s = T(0);
        FOR_HELD(np, v[u].v[e] = d_exp(v[u].v[e] - m); s += v[u].v[e]);
        s = block_sum(s, sh);
        Pack<T> *yr = (Pack<T> *)(y + r * cols);
        _Pragma("unroll") for (int u = 0; u < ROW_PACKS; ++u) {
            const u64 c = threadIdx.x + (u64)u * blockDim.x;
            if (c < np) {
                Pack<T> o;
                _Pragma("unroll") for (int e = 0; e < (int)(16 / sizeof(T)); ++e) o.v[e] = v[u].v[e] / s;
                yr[c] = o;
            }
        }
    }
}

template <typename T>
__device__ void k_rmsnorm(const T *__restrict__ x, const T *__restrict__ w, T *__restrict__ y, u64 rows, u64 cols) {
    if (row_fits<T>(cols, x, w, y, w)) return rmsnorm_held(x, w, y, rows, cols);
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
    if (row_fits<T>(cols, x, w, b, y)) return layernorm_held(x, w, b, y, rows, cols);
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
    if (row_fits<T>(cols, x, y, x, y)) return softmax_held(x, y, rows, cols);
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
