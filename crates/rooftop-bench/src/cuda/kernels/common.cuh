// rooftop CUDA kernels: definitions shared by every source (prepended by the backend;
// NVRTC compiles each source as one translation unit without system headers).
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned long long u64;

// fp16 bits -> f32 without cuda_fp16.h (PTX cvt, every architecture).
__device__ __forceinline__ float f16_to_f32(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float d_exp(float x) { return expf(x); }
__device__ __forceinline__ double d_exp(double x) { return exp(x); }
__device__ __forceinline__ float d_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double d_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float d_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double d_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float d_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double d_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float d_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double d_max(double a, double b) { return fmax(a, b); }
// -infinity without math.h's INFINITY.
template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float((int)0xff800000u); }
template <> __device__ __forceinline__ double neg_inf<double>() { return __longlong_as_double((long long)0xfff0000000000000ull); }

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = d_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. `sh` holds 32 values; it is free again when the function returns.
template <typename T> __device__ T block_sum(T v, T *sh) {
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T r = (threadIdx.x < (blockDim.x >> 5)) ? sh[threadIdx.x] : T(0);
    if (w == 0) r = warp_sum(r);
    if (threadIdx.x == 0) sh[0] = r;
    __syncthreads();
    r = sh[0];
    __syncthreads();
    return r;
}

template <typename T> __device__ T block_max(T v, T *sh) {
    v = warp_max(v);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T r = (threadIdx.x < (blockDim.x >> 5)) ? sh[threadIdx.x] : neg_inf<T>();
    if (w == 0) r = warp_max(r);
    if (threadIdx.x == 0) sh[0] = r;
    __syncthreads();
    r = sh[0];
    __syncthreads();
    return r;
}

#define GRID_STRIDE(i, n) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

// 16 bytes of T, loaded and stored as one vector access (ld/st.global.v4.f32, .v2.f64).
template <typename T> struct alignas(16) Pack {
    T v[16 / sizeof(T)];
};

// True when every pointer is 16-byte aligned (cudaMalloc gives 256; views may not).
__device__ __forceinline__ bool aligned16(const void *a, const void *b = 0, const void *c = 0) {
    return (((u64)a | (u64)b | (u64)c) & 15) == 0;
}

// Packs in flight per thread in the 1-D kernels: four independent 16-byte loads before
// the first use.
#define PACK_UNROLL 4
