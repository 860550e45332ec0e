#include "kernels/cpu/cpu_backend.hpp"

namespace deepcee::kernels {

void cpu_backend::embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                    const float* wpe, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* e = wte + (int64_t)tokens[b * T + t] * C;
      const float* p = wpe + (int64_t)t * C;
      float* o = out + ((int64_t)b * T + t) * C;
      for (int c = 0; c < C; ++c)
        o[c] = e[c] + p[c];
    }
}

void cpu_backend::embedding_backward(float* dwte, float* dwpe, const float* dout,
                                     const int32_t* tokens, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* d = dout + ((int64_t)b * T + t) * C;
      float* e = dwte + (int64_t)tokens[b * T + t] * C;
      float* p = dwpe + (int64_t)t * C;
      for (int c = 0; c < C; ++c) {
        e[c] += d[c];
        p[c] += d[c];
      }
    }
}

} // namespace deepcee::kernels
