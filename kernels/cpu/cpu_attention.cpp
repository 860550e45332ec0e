#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/fast_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace deepcee::kernels {

void cpu_backend::split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H,
                            int D) {
  float* outs[3] = {q, k, v};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int s = 0; s < 3; ++s)
        for (int h = 0; h < H; ++h) {
          const float* src = qkv + ((((int64_t)b * T + t) * 3 + s) * H + h) * D;
          float* dst = outs[s] + (((int64_t)b * H + h) * T + t) * D;
          std::memcpy(dst, src, sizeof(float) * D);
        }
}

void cpu_backend::merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B,
                            int T, int H, int D) {
  const float* ins[3] = {dq, dk, dv};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int s = 0; s < 3; ++s)
        for (int h = 0; h < H; ++h) {
          float* dst = dqkv + ((((int64_t)b * T + t) * 3 + s) * H + h) * D;
          const float* src = ins[s] + (((int64_t)b * H + h) * T + t) * D;
          std::memcpy(dst, src, sizeof(float) * D);
        }
}

void cpu_backend::merge_heads(float* y, const float* yh, int B, int T, int H, int D) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        std::memcpy(y + (((int64_t)b * T + t) * H + h) * D, yh + (((int64_t)b * H + h) * T + t) * D,
                    sizeof(float) * D);
}

void cpu_backend::split_heads(float* yh, const float* y, int B, int T, int H, int D) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        std::memcpy(yh + (((int64_t)b * H + h) * T + t) * D, y + (((int64_t)b * T + t) * H + h) * D,
                    sizeof(float) * D);
}

void cpu_backend::softmax_causal_forward(float* probs, const float* scores, float scale,
                                         int64_t rows, int T) {
  for (int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < T; ++i) {
      const float* s = scores + (r * T + i) * T;
      float* p = probs + (r * T + i) * T;
      float max = -INFINITY;
      for (int j = 0; j <= i; ++j)
        max = std::max(max, s[j]);
      float sum = 0;
      for (int j = 0; j <= i; ++j) {
        p[j] = fast::exp(scale * (s[j] - max));
        sum += p[j];
      }
      float inv = 1.0f / sum;
      for (int j = 0; j <= i; ++j)
        p[j] *= inv;
      std::fill(p + i + 1, p + T, 0.0f);
    }
}

void cpu_backend::softmax_causal_backward(float* dscores, const float* dprobs, const float* probs,
                                          float scale, int64_t rows, int T) {
  for (int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < T; ++i) {
      const float* dp = dprobs + (r * T + i) * T;
      const float* p = probs + (r * T + i) * T;
      float* ds = dscores + (r * T + i) * T;
      float dot = 0;
      for (int j = 0; j <= i; ++j)
        dot += dp[j] * p[j];
      for (int j = 0; j <= i; ++j)
        ds[j] = scale * p[j] * (dp[j] - dot);
      std::fill(ds + i + 1, ds + T, 0.0f);
    }
}

} // namespace deepcee::kernels
