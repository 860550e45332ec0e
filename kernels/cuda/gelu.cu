// GELU, tanh approximation (as GPT-2), forward and backward.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launchers.hpp"

namespace deepcee::kernels::cuda_ops {
namespace {

constexpr float sqrt_2_over_pi = 0.7978845608028654f;
constexpr float gelu_cubic = 0.044715f;

struct gelu_forward_f {
  __device__ float operator()(float u) const {
    return 0.5f * u * (1.0f + tanhf(sqrt_2_over_pi * (u + gelu_cubic * u * u * u)));
  }
};

/// (dy, x) -> gelu'(x) * dy
struct gelu_backward_f {
  __device__ float operator()(float dy, float u) const {
    float t = tanhf(sqrt_2_over_pi * (u + gelu_cubic * u * u * u));
    float dinner = sqrt_2_over_pi * (1.0f + 3.0f * gelu_cubic * u * u);
    return dy * (0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * dinner);
  }
};

} // namespace

void gelu_forward(float* out, const float* x, int64_t n, cudaStream_t stream) {
  map_unary(out, x, n, gelu_forward_f{}, stream);
}

void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, cudaStream_t stream) {
  map_binary(dx, dy, x, n, gelu_backward_f{}, stream);
}

} // namespace deepcee::kernels::cuda_ops
