// Conversions for the tensor-core GEMMs through cuBLASLt: fp32 operands to bf16
// (sm_80+), fp16, or fp8 e4m3 (sm_89+), round to nearest. `_t` variants also
// transpose a rows x cols row-major matrix into cols x rows (the TN layout cuBLASLt
// wants for fp8). Kernels of an architecture that lacks the type compile to nothing;
// the backend never launches them there.

__device__ __forceinline__ u16 to_f16(float x) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

__device__ __forceinline__ u16 to_bf16(float x) {
    u16 h = 0;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
#endif
    return h;
}

__device__ __forceinline__ u8 to_e4m3(float x) {
    u16 h = 0;
#if __CUDA_ARCH__ >= 890
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.f), "f"(x));
#endif
    return (u8)(h & 0xff);
}

extern "C" __global__ void rt_to_f16(const float *__restrict__ src, u16 *__restrict__ dst, u64 n) {
    GRID_STRIDE(i, n) dst[i] = to_f16(src[i]);
}

extern "C" __global__ void rt_to_f16_t(const float *__restrict__ src, u16 *__restrict__ dst, u32 rows, u32 cols) {
    GRID_STRIDE(i, (u64)rows * cols) {
        const u64 c = i / rows, r = i % rows;
        dst[i] = to_f16(src[r * cols + c]);
    }
}

extern "C" __global__ void rt_to_bf16(const float *__restrict__ src, u16 *__restrict__ dst, u64 n) {
    GRID_STRIDE(i, n) dst[i] = to_bf16(src[i]);
}

extern "C" __global__ void rt_to_bf16_t(const float *__restrict__ src, u16 *__restrict__ dst, u32 rows, u32 cols) {
    GRID_STRIDE(i, (u64)rows * cols) {
        const u64 c = i / rows, r = i % rows;
        dst[i] = to_bf16(src[r * cols + c]);
    }
}

extern "C" __global__ void rt_to_e4m3(const float *__restrict__ src, u8 *__restrict__ dst, u64 n) {
    GRID_STRIDE(i, n) dst[i] = to_e4m3(src[i]);
}

extern "C" __global__ void rt_to_e4m3_t(const float *__restrict__ src, u8 *__restrict__ dst, u32 rows, u32 cols) {
    GRID_STRIDE(i, (u64)rows * cols) {
        const u64 c = i / rows, r = i % rows;
        dst[i] = to_e4m3(src[r * cols + c]);
    }
}

