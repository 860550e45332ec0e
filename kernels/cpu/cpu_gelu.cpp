#include "kernels/cpu/cpu_backend.hpp"

#include "kernels/cpu/fast_math.hpp"

namespace deepcee::kernels {
namespace {
constexpr float sqrt_2_over_pi = 0.7978845608028654f;
constexpr float gelu_cubic = 0.044715f;
} // namespace

void cpu_backend::gelu_forward(float* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float u = x[i];
    out[i] = 0.5f * u * (1.0f + fast::tanh(sqrt_2_over_pi * (u + gelu_cubic * u * u * u)));
  }
}

void cpu_backend::gelu_backward(float* dx, const float* dy, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float u = x[i];
    float t = fast::tanh(sqrt_2_over_pi * (u + gelu_cubic * u * u * u));
    float dinner = sqrt_2_over_pi * (1.0f + 3.0f * gelu_cubic * u * u);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * dinner);
  }
}

} // namespace deepcee::kernels
