// Naive SGEMM: C[M x N] = A[M x K] B[K x N], row-major fp32, one thread per element of C.
// Launch (kernels.toml): grid = (ceil(N / blockDim.x), ceil(M / blockDim.y)), any block.
extern "C" __global__ void sgemm_naive(const float* __restrict__ a,
                                       const float* __restrict__ b,
                                       float* __restrict__ c,
                                       unsigned int M, unsigned int N, unsigned int K) {
    const unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    float acc = 0.0f;
    for (unsigned int i = 0; i < K; ++i) {
        acc += a[row * K + i] * b[i * N + col];
    }
    c[row * N + col] = acc;
}
