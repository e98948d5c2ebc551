// SwiGLU: y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). One thread per
// element.
extern "C" __global__ void swiglu(const float* gate, const float* up, float* y,
                                  unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i];
    y[i] = g / (1.0f + expf(-g)) * up[i];
}
