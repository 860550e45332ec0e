#include "kernels/cpu/cpu_backend.hpp"

#include <cmath>

namespace deepcee::kernels {

void cpu_backend::layernorm_forward(float* out, float* mean, float* rstd, const float* x,
                                    const float* gamma, const float* beta, int64_t rows,
                                    int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += xr[j];
    float mu = sum / static_cast<float>(cols);
    float var = 0;
    for (int64_t j = 0; j < cols; ++j) {
      float d = xr[j] - mu;
      var += d * d;
    }
    float rs = 1.0f / std::sqrt(var / static_cast<float>(cols) + eps);
    float* o = out + r * cols;
    for (int64_t j = 0; j < cols; ++j)
      o[j] = (xr[j] - mu) * rs * gamma[j] + beta[j];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void cpu_backend::layernorm_backward_input(float* dx, const float* dy, const float* x,
                                           const float* mean, const float* rstd, const float* gamma,
                                           int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float mu = mean[r], rs = rstd[r];
    // dxhat = dy * gamma; dx = rs * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    float sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int64_t j = 0; j < cols; ++j) {
      float dxhat = dyr[j] * gamma[j];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * (xr[j] - mu) * rs;
    }
    float inv_n = 1.0f / static_cast<float>(cols);
    float* dxr = dx + r * cols;
    for (int64_t j = 0; j < cols; ++j) {
      float xhat = (xr[j] - mu) * rs;
      dxr[j] = rs * (dyr[j] * gamma[j] - sum_dxhat * inv_n - xhat * sum_dxhat_xhat * inv_n);
    }
  }
}

void cpu_backend::layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy,
                                            const float* x, const float* mean, const float* rstd,
                                            int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float mu = mean[r], rs = rstd[r];
    for (int64_t j = 0; j < cols; ++j) {
      dgamma[j] += dyr[j] * (xr[j] - mu) * rs;
      dbeta[j] += dyr[j];
    }
  }
}

} // namespace deepcee::kernels
