// Tiled SGEMM: C[M x N] = A[M x K] B[K x N], row-major fp32. Each 16 x 16 block computes a
// 16 x 16 tile of C, staging 16 x 16 tiles of A and B through shared memory.
// Launch (kernels.toml): block = (16, 16, 1), grid = (ceil(N / 16), ceil(M / 16)).
#define TILE 16

extern "C" __global__ void sgemm_tiled(const float* __restrict__ a,
                                       const float* __restrict__ b,
                                       float* __restrict__ c,
                                       unsigned int M, unsigned int N, unsigned int K) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    const unsigned int tx = threadIdx.x;
    const unsigned int ty = threadIdx.y;
    const unsigned int col = blockIdx.x * TILE + tx;
    const unsigned int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (unsigned int t = 0; t < K; t += TILE) {
        // Out-of-range elements load as 0 so partial tiles need no special case.
        as[ty][tx] = (row < M && t + tx < K) ? a[row * K + t + tx] : 0.0f;
        bs[ty][tx] = (col < N && t + ty < K) ? b[(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (unsigned int i = 0; i < TILE; ++i) {
            acc += as[ty][i] * bs[i][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}
