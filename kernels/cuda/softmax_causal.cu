// Causal softmax over attention scores: rows x T x T, row i of each matrix keeps columns
// j <= i. One warp per matrix row; the masked part is written as zeros, never read.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

constexpr int threads = 256;
constexpr int rows_per_block = threads / warp_size;

/// probs = softmax(scale * scores) over j <= i, computed as exp(scale * (s - max)) / sum
/// with the max of the raw scores, as the CPU backend does. The max and the sum are
/// gathered in one online pass. V = 4 needs T % 4 == 0 and 16-byte aligned pointers; a
/// float4 that straddles i then stays inside the row.
template <int V>
__global__ void softmax_causal_forward_kernel(float* probs, const float* scores, float scale,
                                              int64_t matrix_rows, int T) {
  int64_t g = static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / warp_size;
  int lane = threadIdx.x % warp_size;
  if (g >= matrix_rows)
    return; // whole warp
  int len = static_cast<int>(g % T) + 1;
  const float* s = scores + g * T;
  float* p = probs + g * T;

  float m = -INFINITY, sum = 0.0f;
  for (int j = lane * V; j < len; j += warp_size * V) {
    auto x = fvec<V>::load(s + j);
    for (int k = 0; k < V; ++k)
      if (j + k < len)
        online_add(m, sum, x.v[k], scale);
  }
  warp_online_merge(m, sum, scale);
  float inv = 1.0f / sum;

  for (int j = lane * V; j < T; j += warp_size * V) {
    fvec<V> out;
    if (j < len) {
      auto x = fvec<V>::load(s + j);
      for (int k = 0; k < V; ++k)
        out.v[k] = j + k < len ? expf(scale * (x.v[k] - m)) * inv : 0.0f;
    } else {
      for (int k = 0; k < V; ++k)
        out.v[k] = 0.0f;
    }
    out.store(p + j);
  }
}

/// dscores = scale * probs * (dprobs - sum_j dprobs * probs) over j <= i, zero beyond.
template <int V>
__global__ void softmax_causal_backward_kernel(float* dscores, const float* dprobs,
                                               const float* probs, float scale, int64_t matrix_rows,
                                               int T) {
  int64_t g = static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / warp_size;
  int lane = threadIdx.x % warp_size;
  if (g >= matrix_rows)
    return;
  int len = static_cast<int>(g % T) + 1;
  const float* dp = dprobs + g * T;
  const float* p = probs + g * T;
  float* ds = dscores + g * T;

  float dot = 0.0f;
  for (int j = lane * V; j < len; j += warp_size * V) {
    auto a = fvec<V>::load(dp + j);
    auto b = fvec<V>::load(p + j);
    for (int k = 0; k < V; ++k)
      if (j + k < len)
        dot += a.v[k] * b.v[k];
  }
  dot = warp_sum(dot);

  for (int j = lane * V; j < T; j += warp_size * V) {
    fvec<V> out;
    if (j < len) {
      auto a = fvec<V>::load(dp + j);
      auto b = fvec<V>::load(p + j);
      for (int k = 0; k < V; ++k)
        out.v[k] = j + k < len ? scale * b.v[k] * (a.v[k] - dot) : 0.0f;
    } else {
      for (int k = 0; k < V; ++k)
        out.v[k] = 0.0f;
    }
    out.store(ds + j);
  }
}

unsigned blocks_for(const char* op, int64_t rows, int T) {
  CUDA_REQUIRE(rows >= 0 && T >= 0,
               std::string(op) + ": rows " + std::to_string(rows) + ", T " + std::to_string(T));
  int64_t blocks = ceil_div(rows * T, rows_per_block);
  CUDA_REQUIRE(blocks < (int64_t{1} << 31),
               std::string(op) + ": too many rows: " + std::to_string(rows * T));
  return static_cast<unsigned>(blocks);
}

} // namespace

void softmax_causal_forward(float* probs, const float* scores, float scale, int64_t rows, int T,
                            cudaStream_t stream) {
  unsigned blocks = blocks_for("softmax_causal_forward", rows, T);
  if (blocks == 0)
    return;
  int64_t matrix_rows = rows * T;
  if (T % 4 == 0 && aligned16(probs) && aligned16(scores))
    softmax_causal_forward_kernel<4>
        <<<blocks, threads, 0, stream>>>(probs, scores, scale, matrix_rows, T);
  else
    softmax_causal_forward_kernel<1>
        <<<blocks, threads, 0, stream>>>(probs, scores, scale, matrix_rows, T);
  CUDA_CHECK_LAUNCH();
}

void softmax_causal_backward(float* dscores, const float* dprobs, const float* probs, float scale,
                             int64_t rows, int T, cudaStream_t stream) {
  unsigned blocks = blocks_for("softmax_causal_backward", rows, T);
  if (blocks == 0)
    return;
  int64_t matrix_rows = rows * T;
  if (T % 4 == 0 && aligned16(dscores) && aligned16(dprobs) && aligned16(probs))
    softmax_causal_backward_kernel<4>
        <<<blocks, threads, 0, stream>>>(dscores, dprobs, probs, scale, matrix_rows, T);
  else
    softmax_causal_backward_kernel<1>
        <<<blocks, threads, 0, stream>>>(dscores, dprobs, probs, scale, matrix_rows, T);
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
