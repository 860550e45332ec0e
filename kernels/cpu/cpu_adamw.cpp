#include "kernels/cpu/cpu_backend.hpp"

#include <cmath>

namespace deepcee::kernels {

void cpu_backend::adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                               const adamw_step& s) {
  float bias1 = 1.0f - std::pow(s.beta1, static_cast<float>(s.step));
  float bias2 = 1.0f - std::pow(s.beta2, static_cast<float>(s.step));
  for (int64_t i = 0; i < n; ++i) {
    float g = s.grad_scale * grad[i];
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * g;
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
    float mhat = m[i] / bias1;
    float vhat = v[i] / bias2;
    param[i] -= s.lr * (mhat / (std::sqrt(vhat) + s.eps) + s.weight_decay * param[i]);
  }
}

} // namespace deepcee::kernels
