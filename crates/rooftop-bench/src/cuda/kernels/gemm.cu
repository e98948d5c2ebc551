// Dense row-major C[m x n] = A[m x k] B[k x n] (suite/gemm.rs), fp32 and fp64.
//
// naive: one thread per element of C, 2-D blocks, rows beyond the grid in a loop.
// tiled: BM x BN tiles of C per block, BK-deep slices of A and B staged in shared
// memory, a TM x TN register tile per thread (threads = BM/TM * BN/TN = 256).

template <typename T>
__device__ void k_gemm_naive(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, u32 m, u32 n, u32 k) {
    const u64 col = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    for (u64 row = (u64)blockIdx.y * blockDim.y + threadIdx.y; row < m; row += (u64)gridDim.y * blockDim.y) {
        T acc = T(0);
        for (u32 p = 0; p < k; ++p) acc = d_fma(A[row * k + p], B[(u64)p * n + col], acc);
        C[row * n + col] = acc;
    }
}

template <typename T, int BM, int BN, int BK, int TM, int TN>
__device__ void k_gemm_tiled(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, u32 m, u32 n, u32 k) {
    constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
    __shared__ T As[BK][BM + 1];
    __shared__ T Bs[BK][BN];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const u64 row0 = (u64)blockIdx.y * BM, col0 = (u64)blockIdx.x * BN;
    T acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = T(0);
    for (u32 k0 = 0; k0 < k; k0 += BK) {
        for (int l = tid; l < BM * BK; l += THREADS) {
            const int r = l / BK, c = l % BK;
            const u64 gr = row0 + r, gc = (u64)k0 + c;
            As[c][r] = (gr < m && gc < k) ? A[gr * k + gc] : T(0);
        }
        for (int l = tid; l < BK * BN; l += THREADS) {
            const int r = l / BN, c = l % BN;
            const u64 gr = (u64)k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < k && gc < n) ? B[gr * n + gc] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            T a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * TY];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * TX];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = d_fma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const u64 r = row0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const u64 c = col0 + tx + j * TX;
            if (r < m && c < n) C[r * n + c] = acc[i][j];
        }
    }
}

#define GEMM_EXPORTS(T, S)                                                                                 \
    extern "C" __global__ void rt_gemm_naive_##S(const T *A, const T *B, T *C, u32 m, u32 n, u32 k) {      \
        k_gemm_naive<T>(A, B, C, m, n, k);                                                                   \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) rt_gemm_t32_##S(const T *A, const T *B, T *C, u32 m,  \
                                                                      u32 n, u32 k) {                       \
        k_gemm_tiled<T, 32, 32, 32, 2, 2>(A, B, C, m, n, k);                                                 \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) rt_gemm_t64_##S(const T *A, const T *B, T *C, u32 m,  \
                                                                      u32 n, u32 k) {                       \
        k_gemm_tiled<T, 64, 64, 16, 4, 4>(A, B, C, m, n, k);                                                 \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) rt_gemm_t128_##S(const T *A, const T *B, T *C, u32 m, \
                                                                       u32 n, u32 k) {                      \
        k_gemm_tiled<T, 128, 128, 8, 8, 8>(A, B, C, m, n, k);                                                \
    }

GEMM_EXPORTS(float, f32)
GEMM_EXPORTS(double, f64)
