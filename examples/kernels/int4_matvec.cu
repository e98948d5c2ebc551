// y[N] = W[N x K] x[K] with W in int4, affine symmetric: w = (q - 8) * scale, one fp16
// scale per group of 128 consecutive weights of a row. Layout as the suite's `qmatvec`:
// qweight holds the N rows of K weights one after the other, two per byte (weight 2i in
// the low nibble of byte i, 2i + 1 in the high nibble); scales are N x K/128, row-major.
// One thread per output row. Launch (kernels.toml): grid = ceil(N / blockDim.x).
#define GROUP 128

// IEEE half bits to float (no cuda_fp16.h needed under NVRTC).
__device__ float half_bits_to_float(unsigned short h) {
    const unsigned int sign = (h >> 15) & 1u;
    const int exp = (h >> 10) & 0x1f;
    const unsigned int man = h & 0x3ffu;
    float v;
    if (exp == 0) {
        v = ldexpf((float)man, -24);                    // subnormal
    } else if (exp == 31) {
        v = man ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
    } else {
        v = ldexpf((float)(man | 0x400u), exp - 25);    // 1.man * 2^(exp - 15)
    }
    return sign ? -v : v;
}

extern "C" __global__ void int4_matvec(const float* __restrict__ x,
                                       const unsigned char* __restrict__ qweight,
                                       const unsigned short* __restrict__ scales,
                                       float* __restrict__ y,
                                       unsigned int N, unsigned int K) {
    const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N) {
        return;
    }
    const unsigned int groups = K / GROUP;
    const unsigned char* wrow = qweight + (size_t)row * (K / 2);
    float acc = 0.0f;
    for (unsigned int g = 0; g < groups; ++g) {
        const float s = half_bits_to_float(scales[(size_t)row * groups + g]);
        float part = 0.0f;
        for (unsigned int i = 0; i < GROUP; i += 2) {
            const unsigned int col = g * GROUP + i;
            const unsigned char q = wrow[col / 2];
            part += ((float)(q & 0xf) - 8.0f) * x[col] + ((float)(q >> 4) - 8.0f) * x[col + 1];
        }
        acc += s * part;
    }
    y[row] = acc;
}
