// Token + position embedding: out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :], and its
// accumulated gradients.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

constexpr int threads = 256;

template <int V>
__global__ void embedding_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                         const float* wpe, int B, int T, int C) {
  int cv = C / V;
  int64_t total = static_cast<int64_t>(B) * T * cv;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    int64_t bt = i / cv;
    int c = static_cast<int>(i - bt * cv) * V;
    int t = static_cast<int>(bt % T);
    auto e = fvec<V>::load(wte + static_cast<int64_t>(tokens[bt]) * C + c);
    auto p = fvec<V>::load(wpe + static_cast<int64_t>(t) * C + c);
    for (int k = 0; k < V; ++k)
      e.v[k] += p.v[k];
    e.store(out + bt * C + c);
  }
}

/// One thread per (t, c): walks the batch, scatters into dwte with atomics (several
/// positions may share a token, so the order of those additions is not fixed) and adds
/// the batch sum into dwpe, which it owns.
__global__ void embedding_backward_kernel(float* dwte, float* dwpe, const float* dout,
                                          const int32_t* tokens, int B, int T, int C) {
  int64_t total = static_cast<int64_t>(T) * C;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    int64_t t = i / C;
    int64_t c = i - t * C;
    float sum = 0.0f;
    for (int b = 0; b < B; ++b) {
      int64_t bt = static_cast<int64_t>(b) * T + t;
      float d = dout[bt * C + c];
      atomicAdd(dwte + static_cast<int64_t>(tokens[bt]) * C + c, d);
      sum += d;
    }
    dwpe[i] += sum;
  }
}

void require_shape(const char* op, int B, int T, int C) {
  CUDA_REQUIRE(B >= 0 && T >= 0 && C >= 0, std::string(op) + ": B, T, C = " + std::to_string(B) +
                                               ", " + std::to_string(T) + ", " + std::to_string(C));
}

} // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                       int T, int C, cudaStream_t stream) {
  require_shape("embedding_forward", B, T, C);
  int64_t total = static_cast<int64_t>(B) * T * C;
  if (total == 0)
    return;
  if (C % 4 == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe))
    embedding_forward_kernel<4>
        <<<grid_for(total / 4, threads), threads, 0, stream>>>(out, tokens, wte, wpe, B, T, C);
  else
    embedding_forward_kernel<1>
        <<<grid_for(total, threads), threads, 0, stream>>>(out, tokens, wte, wpe, B, T, C);
  CUDA_CHECK_LAUNCH();
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, cudaStream_t stream) {
  require_shape("embedding_backward", B, T, C);
  int64_t total = static_cast<int64_t>(T) * C;
  if (total == 0)
    return;
  embedding_backward_kernel<<<grid_for(total, threads), threads, 0, stream>>>(dwte, dwpe, dout,
                                                                              tokens, B, T, C);
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
