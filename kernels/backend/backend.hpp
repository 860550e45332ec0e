#pragma once

#include "kernels/backend/tensor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace deepcee::kernels {

enum class backend_kind { cpu, cuda };

/// Precision of matrix products. fp32 everywhere by default; `bf16` lets the CUDA
/// backend run its matrix products on bf16 tensor cores (fp32 storage and accumulation).
enum class matmul_precision { fp32, bf16 };

struct backend_options {
  backend_kind kind = backend_kind::cpu;
  int threads = 1; ///< CPU: OpenBLAS threads (0 = OpenBLAS's default)
  int device = 0;  ///< CUDA: device ordinal
  matmul_precision precision = matmul_precision::fp32;
};

/// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, all row-major.
/// The shapes: op(A) is m x k, op(B) is k x n, C is m x n. The row strides lda/ldb/ldc are
/// those of the matrices as stored (before op). Strides step from one batch entry to the
/// next.
struct gemm_desc {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  int lda = 0, ldb = 0, ldc = 0;
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

/// The descriptor of a product of densely packed row-major matrices (every leading
/// dimension is the stored row length), the only kind the GPT layers use.
inline gemm_desc packed_gemm(bool trans_a, bool trans_b, int m, int n, int k, float beta = 0.0f) {
  gemm_desc d;
  d.trans_a = trans_a;
  d.trans_b = trans_b;
  d.m = m;
  d.n = n;
  d.k = k;
  d.beta = beta;
  d.lda = trans_a ? m : k;
  d.ldb = trans_b ? k : n;
  d.ldc = n;
  return d;
}

/// `n` floats in a backend's memory (kernels/cuda compiles as C++17: no std::span here).
struct float_buffer {
  const float* data = nullptr;
  int64_t n = 0;
};

struct adamw_step {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0;
  float grad_scale = 1; ///< multiplies the gradient first (global-norm clipping)
  int step = 1;         ///< 1-based, for bias correction
};

/// The operations the GPT layers need, implemented once per device kind. Pointers are
/// into tensors allocated by the same backend. Operations may run asynchronously in
/// issue order; `download`, `sum_squares` and `synchronize` wait for them. "Overwrite"
/// ops write their output; "accumulate" ops add into it (gradients across micro-batches).
/// Every op is checked against the CPU backend by the backend tests.
class backend {
public:
  virtual ~backend() = default;

  virtual backend_kind kind() const = 0;
  virtual std::string name() const = 0;

  // Memory.
  virtual tensor alloc(std::vector<int64_t> shape, dtype type = dtype::f32) = 0;
  virtual void upload(tensor& dst, const void* host, size_t bytes) = 0;
  virtual void download(const tensor& src, void* host, size_t bytes) = 0;
  virtual void copy(float* dst, const float* src, int64_t n) = 0;
  virtual void fill(float* x, float value, int64_t n) = 0;
  virtual void synchronize() = 0;

  // Dense algebra.
  /// The batch's outputs must not overlap: stride_c >= (m - 1) * ldc + n when batch > 1.
  virtual void gemm(const gemm_desc& d, const float* a, const float* b, float* c) = 0;
  /// y[r, :] += bias for every row r.
  virtual void add_bias(float* y, const float* bias, int64_t rows, int64_t cols) = 0;
  /// dbias += sum over rows of dy (accumulate).
  virtual void bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols) = 0;
  /// out = a + b (out may alias a or b).
  virtual void add(float* out, const float* a, const float* b, int64_t n) = 0;
  /// y += alpha * x.
  virtual void axpy(float* y, float alpha, const float* x, int64_t n) = 0;
  virtual void scale(float* x, float alpha, int64_t n) = 0;
  /// Sum of x[i]^2, accumulated in double; waits for the result.
  virtual double sum_squares(const float* x, int64_t n) = 0;
  /// The sum_squares of each buffer, added in order (the same bits as calling it for each);
  /// waits once.
  virtual double sum_squares_of(const std::vector<float_buffer>& buffers);

  // LayerNorm over the last dimension; mean and rstd are saved per row for backward.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* x,
                                 const float* gamma, const float* beta, int64_t rows, int64_t cols,
                                 float eps) = 0;
  /// dx = d(out)/dx^T dy (overwrite).
  virtual void layernorm_backward_input(float* dx, const float* dy, const float* x,
                                        const float* mean, const float* rstd, const float* gamma,
                                        int64_t rows, int64_t cols) = 0;
  /// dgamma += sum dy * xhat, dbeta += sum dy (accumulate).
  virtual void layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy,
                                         const float* x, const float* mean, const float* rstd,
                                         int64_t rows, int64_t cols) = 0;

  // GELU, tanh approximation.
  virtual void gelu_forward(float* out, const float* x, int64_t n) = 0;
  /// dx = gelu'(x) * dy (overwrite).
  virtual void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) = 0;

  // Attention layout changes. qkv is [B, T, 3, H, D]; q, k, v, yh are [B, H, T, D];
  // y is [B, T, H, D].
  virtual void split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H,
                         int D) = 0;
  virtual void merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B,
                         int T, int H, int D) = 0;
  virtual void merge_heads(float* y, const float* yh, int B, int T, int H, int D) = 0;
  virtual void split_heads(float* yh, const float* y, int B, int T, int H, int D) = 0;

  /// probs[r, i, j] = softmax_j(scale * scores[r, i, j]) over j <= i, and 0 for j > i;
  /// for r < rows (= batch * heads), each a T x T matrix.
  virtual void softmax_causal_forward(float* probs, const float* scores, float scale, int64_t rows,
                                      int T) = 0;
  /// dscores = scale * probs * (dprobs - sum_j dprobs * probs) (overwrite).
  virtual void softmax_causal_backward(float* dscores, const float* dprobs, const float* probs,
                                       float scale, int64_t rows, int T) = 0;

  // Token + position embedding. out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :].
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                 const float* wpe, int B, int T, int C) = 0;
  /// dwte[tokens[b,t], :] += dout[b, t, :], dwpe[t, :] += dout[b, t, :] (accumulate).
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout,
                                  const int32_t* tokens, int B, int T, int C) = 0;

  // Softmax cross-entropy over rows of logits [n, V].
  /// losses[r] = -log softmax(logits[r])[targets[r]]; probs = softmax(logits).
  virtual void cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const int32_t* targets, int64_t n, int V) = 0;
  /// dlogits = scale * (probs - onehot(targets)) (overwrite; dlogits may alias probs).
  virtual void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                      float scale, int64_t n, int V) = 0;

  /// AdamW with decoupled weight decay and bias correction. With g = grad_scale * grad, it
  /// updates m = b1 m + (1-b1) g and v = b2 v + (1-b2) g^2. Then
  /// param -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * param).
  virtual void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                            const adamw_step& s) = 0;

  // Conveniences over the virtual interface.
  tensor zeros(std::vector<int64_t> shape) {
    tensor t = alloc(std::move(shape));
    fill(t.f32(), 0.0f, t.numel());
    return t;
  }
  template <class T>
  tensor from_host(const std::vector<T>& values, std::vector<int64_t> shape);
  template <class T>
  std::vector<T> to_host(const tensor& t) {
    std::vector<T> out(static_cast<size_t>(t.numel()));
    download(t, out.data(), out.size() * sizeof(T));
    return out;
  }
};

template <class T>
tensor backend::from_host(const std::vector<T>& values, std::vector<int64_t> shape) {
  static_assert(sizeof(T) == 4, "tensors hold 4-byte elements");
  tensor t = alloc(std::move(shape), std::is_integral_v<T> ? dtype::i32 : dtype::f32);
  if (static_cast<size_t>(t.numel()) != values.size())
    throw std::invalid_argument("backend::from_host: " + std::to_string(values.size()) +
                                " values for shape " + shape_string(t.shape()));
  upload(t, values.data(), values.size() * sizeof(T));
  return t;
}

backend_kind parse_backend_kind(const std::string& name);

} // namespace deepcee::kernels
