#pragma once

#include "kernels/backend/backend.hpp"

#include <memory>

namespace deepcee::kernels {

/// fp32 on the host: OpenBLAS sgemm for matrix products, plain loops for the rest.
/// The reference every other backend is checked against.
class cpu_backend final : public backend {
public:
  explicit cpu_backend(int threads);

  backend_kind kind() const override { return backend_kind::cpu; }
  std::string name() const override;

  tensor alloc(std::vector<int64_t> shape, dtype type) override;
  void upload(tensor& dst, const void* host, size_t bytes) override;
  void download(const tensor& src, void* host, size_t bytes) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* x, float value, int64_t n) override;
  void synchronize() override {}

  void gemm(const gemm_desc& d, const float* a, const float* b, float* c) override;
  void add_bias(float* y, const float* bias, int64_t rows, int64_t cols) override;
  void bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols) override;
  void add(float* out, const float* a, const float* b, int64_t n) override;
  void axpy(float* y, float alpha, const float* x, int64_t n) override;
  void scale(float* x, float alpha, int64_t n) override;
  double sum_squares(const float* x, int64_t n) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                         const float* beta, int64_t rows, int64_t cols, float eps) override;
  void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                                const float* rstd, const float* gamma, int64_t rows,
                                int64_t cols) override;
  void layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy, const float* x,
                                 const float* mean, const float* rstd, int64_t rows,
                                 int64_t cols) override;

  void gelu_forward(float* out, const float* x, int64_t n) override;
  void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) override;

  void split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H,
                 int D) override;
  void merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B, int T,
                 int H, int D) override;
  void merge_heads(float* y, const float* yh, int B, int T, int H, int D) override;
  void split_heads(float* yh, const float* y, int B, int T, int H, int D) override;
  void softmax_causal_forward(float* probs, const float* scores, float scale, int64_t rows,
                              int T) override;
  void softmax_causal_backward(float* dscores, const float* dprobs, const float* probs, float scale,
                               int64_t rows, int T) override;

  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int B, int T, int C) override;
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                          int T, int C) override;

  void cross_entropy_forward(float* losses, float* probs, const float* logits,
                             const int32_t* targets, int64_t n, int V) override;
  void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                              float scale, int64_t n, int V) override;

  void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                    const adamw_step& s) override;

private:
  class block_pool;

  int threads_;
  /// Freed blocks are kept for reuse: every training step allocates the same sizes, and
  /// fresh pages from the system cost a page fault each.
  std::shared_ptr<block_pool> pool_;
};

} // namespace deepcee::kernels
