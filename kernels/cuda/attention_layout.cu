// Attention layout changes: qkv [B, T, 3, H, D] <-> q, k, v [B, H, T, D], and
// y [B, T, H, D] <-> yh [B, H, T, D]. Pure copies; one thread moves V floats, indexed in
// the [B, T, ...] order so that reads and writes both run along D.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

struct three_ptrs {
  float* p[3];
};

/// ToHeads: q/k/v <- qkv (split); otherwise qkv <- q/k/v (merge).
template <int V, bool ToHeads>
__global__ void qkv_kernel(float* qkv, three_ptrs heads, int B, int T, int H, int D) {
  int dv = D / V;
  int64_t total = static_cast<int64_t>(B) * T * 3 * H * dv;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    int64_t rest = i / dv;
    int d = static_cast<int>(i - rest * dv);
    int h = static_cast<int>(rest % H);
    rest /= H;
    int s = static_cast<int>(rest % 3);
    rest /= 3;
    int t = static_cast<int>(rest % T);
    int64_t b = rest / T;
    int64_t head_offset = ((b * H + h) * T + t) * D + static_cast<int64_t>(d) * V;
    if constexpr (ToHeads)
      fvec<V>::load(qkv + i * V).store(heads.p[s] + head_offset);
    else
      fvec<V>::load(heads.p[s] + head_offset).store(qkv + i * V);
  }
}

/// ToHeads: yh <- y (split_heads); otherwise y <- yh (merge_heads).
template <int V, bool ToHeads>
__global__ void heads_kernel(float* y, float* yh, int B, int T, int H, int D) {
  int dv = D / V;
  int64_t total = static_cast<int64_t>(B) * T * H * dv;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    int64_t rest = i / dv;
    int d = static_cast<int>(i - rest * dv);
    int h = static_cast<int>(rest % H);
    rest /= H;
    int t = static_cast<int>(rest % T);
    int64_t b = rest / T;
    int64_t head_offset = ((b * H + h) * T + t) * D + static_cast<int64_t>(d) * V;
    if constexpr (ToHeads)
      fvec<V>::load(y + i * V).store(yh + head_offset);
    else
      fvec<V>::load(yh + head_offset).store(y + i * V);
  }
}

constexpr int threads = 256;

void require_shape(const char* op, int B, int T, int H, int D) {
  CUDA_REQUIRE(B >= 0 && T >= 0 && H >= 0 && D >= 0,
               std::string(op) + ": B, T, H, D = " + std::to_string(B) + ", " + std::to_string(T) +
                   ", " + std::to_string(H) + ", " + std::to_string(D));
}

template <bool ToHeads>
void launch_qkv(float* qkv, three_ptrs heads, int B, int T, int H, int D, cudaStream_t stream) {
  int64_t total = static_cast<int64_t>(B) * T * 3 * H * D;
  if (total == 0)
    return;
  bool vec = D % 4 == 0 && aligned16(qkv) && aligned16(heads.p[0]) && aligned16(heads.p[1]) &&
             aligned16(heads.p[2]);
  if (vec)
    qkv_kernel<4, ToHeads>
        <<<grid_for(total / 4, threads), threads, 0, stream>>>(qkv, heads, B, T, H, D);
  else
    qkv_kernel<1, ToHeads>
        <<<grid_for(total, threads), threads, 0, stream>>>(qkv, heads, B, T, H, D);
  CUDA_CHECK_LAUNCH();
}

template <bool ToHeads>
void launch_heads(float* y, float* yh, int B, int T, int H, int D, cudaStream_t stream) {
  int64_t total = static_cast<int64_t>(B) * T * H * D;
  if (total == 0)
    return;
  if (D % 4 == 0 && aligned16(y) && aligned16(yh))
    heads_kernel<4, ToHeads>
        <<<grid_for(total / 4, threads), threads, 0, stream>>>(y, yh, B, T, H, D);
  else
    heads_kernel<1, ToHeads><<<grid_for(total, threads), threads, 0, stream>>>(y, yh, B, T, H, D);
  CUDA_CHECK_LAUNCH();
}

} // namespace

void split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H, int D,
               cudaStream_t stream) {
  require_shape("split_qkv", B, T, H, D);
  launch_qkv<true>(const_cast<float*>(qkv), three_ptrs{{q, k, v}}, B, T, H, D, stream);
}

void merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B, int T, int H,
               int D, cudaStream_t stream) {
  require_shape("merge_qkv", B, T, H, D);
  // The kernel only reads the head tensors in this direction.
  three_ptrs heads{{const_cast<float*>(dq), const_cast<float*>(dk), const_cast<float*>(dv)}};
  launch_qkv<false>(dqkv, heads, B, T, H, D, stream);
}

void merge_heads(float* y, const float* yh, int B, int T, int H, int D, cudaStream_t stream) {
  require_shape("merge_heads", B, T, H, D);
  launch_heads<false>(y, const_cast<float*>(yh), B, T, H, D, stream);
}

void split_heads(float* yh, const float* y, int B, int T, int H, int D, cudaStream_t stream) {
  require_shape("split_heads", B, T, H, D);
  launch_heads<true>(const_cast<float*>(y), yh, B, T, H, D, stream);
}

} // namespace deepcee::kernels::cuda_ops
