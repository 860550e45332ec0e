#pragma once

// The launchers of the CUDA kernels, one group per .cu file. Each checks its shapes
// (std::invalid_argument), enqueues its kernels on `stream` and returns at once; none
// synchronizes. Pointers are device pointers. C++17, so .cu files can include it.

#include "kernels/backend/backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace deepcee::kernels::cuda_ops {

/// Stream-ordered scratch memory owned by the backend. The pointer stays valid for work
/// enqueued on the same stream until the next `get`.
class scratch_arena {
public:
  virtual void* get(size_t bytes) = 0;

protected:
  ~scratch_arena() = default;
};

// elementwise.cu
void fill(float* x, float value, int64_t n, cudaStream_t stream);
void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream);
void axpy(float* y, float alpha, const float* x, int64_t n, cudaStream_t stream);
void scale(float* x, float alpha, int64_t n, cudaStream_t stream);
void add_bias(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);
void bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols,
                   scratch_arena& scratch, cudaStream_t stream);
/// Writes the sum of x[i]^2 (accumulated in double) to the device double `result`.
void sum_squares(double* result, const float* x, int64_t n, scratch_arena& scratch,
                 cudaStream_t stream);
/// dst[j] += sum over s < splits of partials[s * cols + j].
void add_partials(float* dst, const float* partials, int64_t splits, int64_t cols,
                  cudaStream_t stream);
/// Row splits for a column reduction over rows x cols, shared by bias and LayerNorm grads.
int64_t column_reduce_splits(int64_t rows, int64_t cols);

// matmul.cu
void gemm(cublasHandle_t handle, const gemm_desc& d, const float* a, const float* b, float* c,
          matmul_precision precision);

// layernorm.cu
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t rows, int64_t cols, float eps,
                       cudaStream_t stream);
void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                              const float* rstd, const float* gamma, int64_t rows, int64_t cols,
                              cudaStream_t stream);
void layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy, const float* x,
                               const float* mean, const float* rstd, int64_t rows, int64_t cols,
                               scratch_arena& scratch, cudaStream_t stream);

// gelu.cu
void gelu_forward(float* out, const float* x, int64_t n, cudaStream_t stream);
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, cudaStream_t stream);

// attention_layout.cu
void split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H, int D,
               cudaStream_t stream);
void merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B, int T, int H,
               int D, cudaStream_t stream);
void merge_heads(float* y, const float* yh, int B, int T, int H, int D, cudaStream_t stream);
void split_heads(float* yh, const float* y, int B, int T, int H, int D, cudaStream_t stream);

// softmax_causal.cu
void softmax_causal_forward(float* probs, const float* scores, float scale, int64_t rows, int T,
                            cudaStream_t stream);
void softmax_causal_backward(float* dscores, const float* dprobs, const float* probs, float scale,
                             int64_t rows, int T, cudaStream_t stream);

// embedding.cu
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                       int T, int C, cudaStream_t stream);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, cudaStream_t stream);

// cross_entropy.cu
void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* targets,
                           int64_t n, int V, cudaStream_t stream);
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets, float scale,
                            int64_t n, int V, cudaStream_t stream);

// adamw.cu
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const adamw_step& s, cudaStream_t stream);

} // namespace deepcee::kernels::cuda_ops
