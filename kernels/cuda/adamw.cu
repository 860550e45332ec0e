// AdamW with decoupled weight decay and bias correction, one thread per parameter.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <cmath>
#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

struct adamw_args {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float bias1, bias2; // 1 - beta^step, computed once on the host as the CPU backend does
};

__device__ inline void adamw_one(float& p, float grad, float& m, float& v, const adamw_args& a) {
  float g = a.grad_scale * grad;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  float mhat = m / a.bias1;
  float vhat = v / a.bias2;
  p -= a.lr * (mhat / (sqrtf(vhat) + a.eps) + a.weight_decay * p);
}

template <bool Vec>
__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, int64_t n,
                             adamw_args a) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if constexpr (Vec) {
    int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      float4 p4 = reinterpret_cast<float4*>(param)[i];
      float4 g4 = reinterpret_cast<const float4*>(grad)[i];
      float4 m4 = reinterpret_cast<float4*>(m)[i];
      float4 v4 = reinterpret_cast<float4*>(v)[i];
      adamw_one(p4.x, g4.x, m4.x, v4.x, a);
      adamw_one(p4.y, g4.y, m4.y, v4.y, a);
      adamw_one(p4.z, g4.z, m4.z, v4.z, a);
      adamw_one(p4.w, g4.w, m4.w, v4.w, a);
      reinterpret_cast<float4*>(param)[i] = p4;
      reinterpret_cast<float4*>(m)[i] = m4;
      reinterpret_cast<float4*>(v)[i] = v4;
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride)
    adamw_one(param[i], grad[i], m[i], v[i], a);
}

} // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const adamw_step& s, cudaStream_t stream) {
  CUDA_REQUIRE(n >= 0, "adamw_update: negative element count " + std::to_string(n));
  CUDA_REQUIRE(s.step >= 1, "adamw_update: step is 1-based, got " + std::to_string(s.step));
  if (n == 0)
    return;
  adamw_args a{s.lr,
               s.beta1,
               s.beta2,
               s.eps,
               s.weight_decay,
               s.grad_scale,
               1.0f - std::pow(s.beta1, static_cast<float>(s.step)),
               1.0f - std::pow(s.beta2, static_cast<float>(s.step))};
  constexpr int threads = 256;
  if (aligned16(param) && aligned16(grad) && aligned16(m) && aligned16(v))
    adamw_kernel<true>
        <<<grid_for(ceil_div(n, 4), threads), threads, 0, stream>>>(param, grad, m, v, n, a);
  else
    adamw_kernel<false><<<grid_for(n, threads), threads, 0, stream>>>(param, grad, m, v, n, a);
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
