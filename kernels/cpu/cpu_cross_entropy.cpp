#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/fast_math.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::kernels {

void cpu_backend::cross_entropy_forward(float* losses, float* probs, const float* logits,
                                        const int32_t* targets, int64_t n, int V) {
  for (int64_t r = 0; r < n; ++r) {
    const float* z = logits + r * V;
    float* p = probs + r * V;
    float max = *std::max_element(z, z + V);
    float sum = 0;
    for (int j = 0; j < V; ++j) {
      p[j] = fast::exp(z[j] - max);
      sum += p[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < V; ++j)
      p[j] *= inv;
    losses[r] = std::log(sum) - (z[targets[r]] - max);
  }
}

void cpu_backend::cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                         float scale, int64_t n, int V) {
  for (int64_t r = 0; r < n; ++r) {
    const float* p = probs + r * V;
    float* d = dlogits + r * V;
    for (int j = 0; j < V; ++j)
      d[j] = scale * p[j];
    d[targets[r]] -= scale;
  }
}

} // namespace deepcee::kernels
