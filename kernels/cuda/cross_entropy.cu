// Softmax cross-entropy over rows of logits [n, V]: one block per row, since V is the
// vocabulary (50257 for GPT-2) and a row is read twice and written once.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

constexpr int threads = 512;
constexpr int warps = threads / warp_size;

/// losses[r] = log(sum) - (z[target] - max), probs = exp(z - max) / sum. A target outside
/// [0, V) gives a NaN loss rather than a read out of bounds.
__global__ void cross_entropy_forward_kernel(float* losses, float* probs, const float* logits,
                                             const int32_t* targets, int V) {
  __shared__ float shared_m[warps], shared_s[warps];
  int64_t r = blockIdx.x;
  const float* z = logits + r * V;
  float* p = probs + r * V;
  float m = -INFINITY, s = 0.0f;
  for (int j = threadIdx.x; j < V; j += threads)
    online_add(m, s, z[j], 1.0f);
  warp_online_merge(m, s, 1.0f);
  int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  if (lane == 0) {
    shared_m[warp] = m;
    shared_s[warp] = s;
  }
  __syncthreads();
  m = lane < warps ? shared_m[lane] : -INFINITY;
  s = lane < warps ? shared_s[lane] : 0.0f;
  warp_online_merge(m, s, 1.0f); // every warp reduces the same values: all agree
  float inv = 1.0f / s;
  for (int j = threadIdx.x; j < V; j += threads)
    p[j] = expf(z[j] - m) * inv;
  if (threadIdx.x == 0) {
    int t = targets[r];
    losses[r] = t >= 0 && t < V ? logf(s) - (z[t] - m) : NAN;
  }
}

__global__ void cross_entropy_backward_kernel(float* dlogits, const float* probs,
                                              const int32_t* targets, float scale, int V) {
  int64_t r = blockIdx.x;
  const float* p = probs + r * V;
  float* d = dlogits + r * V;
  int t = targets[r];
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float g = scale * p[j];
    d[j] = j == t ? g - scale : g;
  }
}

void require_shape(const char* op, int64_t n, int V) {
  CUDA_REQUIRE(n >= 0 && n < (int64_t{1} << 31) && V >= 0,
               std::string(op) + ": n " + std::to_string(n) + ", V " + std::to_string(V));
}

} // namespace

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* targets,
                           int64_t n, int V, cudaStream_t stream) {
  require_shape("cross_entropy_forward", n, V);
  if (n == 0)
    return;
  cross_entropy_forward_kernel<<<static_cast<unsigned>(n), threads, 0, stream>>>(
      losses, probs, logits, targets, V);
  CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets, float scale,
                            int64_t n, int V, cudaStream_t stream) {
  require_shape("cross_entropy_backward", n, V);
  if (n == 0 || V == 0)
    return;
  cross_entropy_backward_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(dlogits, probs,
                                                                              targets, scale, V);
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
