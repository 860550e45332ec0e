// The CUDA backend: memory, the stream and the cuBLAS handle; every op forwards to its
// launcher (one .cu file per op, declared in launchers.hpp).
#include "kernels/cuda/cuda_backend.hpp"

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace deepcee::kernels {
namespace {

/// The stream outlives the backend while tensors still hold memory that their deleters
/// free on it: backend and deleters share this owner.
struct stream_owner {
  cudaStream_t stream = nullptr;
  stream_owner() = default;
  stream_owner(const stream_owner&) = delete;
  stream_owner& operator=(const stream_owner&) = delete;
  ~stream_owner() {
    if (stream != nullptr)
      cudaStreamDestroy(stream); // waits for nothing; pending work still completes
  }
};

class cuda_backend final : public backend, private cuda_ops::scratch_arena {
public:
  explicit cuda_backend(const backend_options& options);
  ~cuda_backend() override { release(); }
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  backend_kind kind() const override { return backend_kind::cuda; }
  std::string name() const override { return name_; }

  tensor alloc(std::vector<int64_t> shape, dtype type) override;
  void upload(tensor& dst, const void* host, size_t bytes) override;
  void download(const tensor& src, void* host, size_t bytes) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* x, float value, int64_t n) override {
    activate();
    cuda_ops::fill(x, value, n, stream());
  }
  void synchronize() override {
    activate();
    CUDA_CHECK(cudaStreamSynchronize(stream()));
  }

  void gemm(const gemm_desc& d, const float* a, const float* b, float* c) override {
    activate();
    cuda_ops::gemm(cublas_, d, a, b, c, precision_);
  }
  void add_bias(float* y, const float* bias, int64_t rows, int64_t cols) override {
    activate();
    cuda_ops::add_bias(y, bias, rows, cols, stream());
  }
  void bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols) override {
    activate();
    cuda_ops::bias_backward(dbias, dy, rows, cols, *this, stream());
  }
  void add(float* out, const float* a, const float* b, int64_t n) override {
    activate();
    cuda_ops::add(out, a, b, n, stream());
  }
  void axpy(float* y, float alpha, const float* x, int64_t n) override {
    activate();
    cuda_ops::axpy(y, alpha, x, n, stream());
  }
  void scale(float* x, float alpha, int64_t n) override {
    activate();
    cuda_ops::scale(x, alpha, n, stream());
  }
  double sum_squares(const float* x, int64_t n) override;
  double sum_squares_of(const std::vector<float_buffer>& buffers) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                         const float* beta, int64_t rows, int64_t cols, float eps) override {
    activate();
    cuda_ops::layernorm_forward(out, mean, rstd, x, gamma, beta, rows, cols, eps, stream());
  }
  void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                                const float* rstd, const float* gamma, int64_t rows,
                                int64_t cols) override {
    activate();
    cuda_ops::layernorm_backward_input(dx, dy, x, mean, rstd, gamma, rows, cols, stream());
  }
  void layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy, const float* x,
                                 const float* mean, const float* rstd, int64_t rows,
                                 int64_t cols) override {
    activate();
    cuda_ops::layernorm_backward_weight(dgamma, dbeta, dy, x, mean, rstd, rows, cols, *this,
                                        stream());
  }

  void gelu_forward(float* out, const float* x, int64_t n) override {
    activate();
    cuda_ops::gelu_forward(out, x, n, stream());
  }
  void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) override {
    activate();
    cuda_ops::gelu_backward(dx, dy, x, n, stream());
  }

  void split_qkv(float* q, float* k, float* v, const float* qkv, int B, int T, int H,
                 int D) override {
    activate();
    cuda_ops::split_qkv(q, k, v, qkv, B, T, H, D, stream());
  }
  void merge_qkv(float* dqkv, const float* dq, const float* dk, const float* dv, int B, int T,
                 int H, int D) override {
    activate();
    cuda_ops::merge_qkv(dqkv, dq, dk, dv, B, T, H, D, stream());
  }
  void merge_heads(float* y, const float* yh, int B, int T, int H, int D) override {
    activate();
    cuda_ops::merge_heads(y, yh, B, T, H, D, stream());
  }
  void split_heads(float* yh, const float* y, int B, int T, int H, int D) override {
    activate();
    cuda_ops::split_heads(yh, y, B, T, H, D, stream());
  }
  void softmax_causal_forward(float* probs, const float* scores, float scale, int64_t rows,
                              int T) override {
    activate();
    cuda_ops::softmax_causal_forward(probs, scores, scale, rows, T, stream());
  }
  void softmax_causal_backward(float* dscores, const float* dprobs, const float* probs, float scale,
                               int64_t rows, int T) override {
    activate();
    cuda_ops::softmax_causal_backward(dscores, dprobs, probs, scale, rows, T, stream());
  }

  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int B, int T, int C) override {
    activate();
    cuda_ops::embedding_forward(out, tokens, wte, wpe, B, T, C, stream());
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                          int T, int C) override {
    activate();
    cuda_ops::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, stream());
  }

  void cross_entropy_forward(float* losses, float* probs, const float* logits,
                             const int32_t* targets, int64_t n, int V) override {
    activate();
    cuda_ops::cross_entropy_forward(losses, probs, logits, targets, n, V, stream());
  }
  void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                              float scale, int64_t n, int V) override {
    activate();
    cuda_ops::cross_entropy_backward(dlogits, probs, targets, scale, n, V, stream());
  }

  void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                    const adamw_step& s) override {
    activate();
    cuda_ops::adamw_update(param, grad, m, v, n, s, stream());
  }

private:
  /// The current device is per host thread, and several backends (one per GPU) may be
  /// driven from one thread; so every entry point selects its own device first.
  void activate() const { CUDA_CHECK(cudaSetDevice(device_)); }
  cudaStream_t stream() const { return owner_->stream; }
  void* get(size_t bytes) override;
  void release() noexcept;

  int device_;
  matmul_precision precision_;
  std::string name_;
  std::shared_ptr<stream_owner> owner_ = std::make_shared<stream_owner>();
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  void* scratch_ = nullptr; // stream-ordered, grows on demand
  size_t scratch_bytes_ = 0;
  /// Room for `n` results of reductions, on the device and pinned on the host (so the copy
  /// back is a true async copy).
  void reserve_results(size_t n);
  double* results_device_ = nullptr;
  double* results_host_ = nullptr;
  size_t results_ = 0;
};

// cuBLAS recommends 32 MiB of workspace on Hopper.
constexpr size_t cublas_workspace_bytes = size_t{32} << 20;

cuda_backend::cuda_backend(const backend_options& options)
    : device_(options.device), precision_(options.precision) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device_ < 0 || device_ >= count)
    throw std::runtime_error("cuda_backend: device " + std::to_string(device_) +
                             " asked for, but only " + std::to_string(count) + " visible");
  try {
    activate();
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = "cuda:" + std::to_string(device_) + " (" + prop.name + ", " +
            (precision_ == matmul_precision::bf16 ? "bf16" : "fp32") + " matmul)";
    // Keep freed memory in the device's pool instead of returning it at every
    // synchronization: tensors come and go every micro-batch.
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_));
    uint64_t threshold = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));

    CUDA_CHECK(cudaStreamCreateWithFlags(&owner_->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream()));
    CUDA_CHECK(cudaMalloc(&cublas_workspace_, cublas_workspace_bytes));
    CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, cublas_workspace_bytes));
    // fp32 means fp32: no TF32 unless bf16 was asked for (which sets the compute type).
    CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    reserve_results(1);
  } catch (...) {
    release();
    throw;
  }
}

void cuda_backend::release() noexcept {
  // Errors are ignored: a destructor must not throw, and there is nobody left to tell.
  cudaSetDevice(device_);
  if (owner_->stream != nullptr) {
    cudaStreamSynchronize(owner_->stream);
    if (scratch_ != nullptr)
      cudaFreeAsync(scratch_, owner_->stream);
    cudaStreamSynchronize(owner_->stream);
  }
  scratch_ = nullptr;
  if (cublas_ != nullptr)
    cublasDestroy(cublas_);
  cublas_ = nullptr;
  cudaFree(cublas_workspace_);
  cudaFree(results_device_);
  cudaFreeHost(results_host_);
  cublas_workspace_ = nullptr;
  results_device_ = results_host_ = nullptr;
  results_ = 0;
}

void cuda_backend::reserve_results(size_t n) {
  if (n <= results_)
    return;
  CUDA_CHECK(cudaStreamSynchronize(stream())); // nothing still writes the old ones
  CUDA_CHECK(cudaFree(results_device_));
  CUDA_CHECK(cudaFreeHost(results_host_));
  results_device_ = results_host_ = nullptr;
  results_ = 0;
  CUDA_CHECK(cudaMalloc(&results_device_, n * sizeof(double)));
  CUDA_CHECK(cudaMallocHost(&results_host_, n * sizeof(double)));
  results_ = n;
}

tensor cuda_backend::alloc(std::vector<int64_t> shape, dtype type) {
  for (int64_t d : shape)
    if (d < 0)
      throw std::invalid_argument("cuda_backend::alloc: negative dimension in " +
                                  shape_string(shape));
  activate();
  // At least 256 bytes, so that an empty tensor still has storage (as on the CPU).
  size_t bytes = std::max<size_t>(tensor(nullptr, shape, type).bytes(), 256);
  void* p = nullptr;
  CUDA_CHECK(cudaMallocAsync(&p, bytes, stream()));
  std::shared_ptr<stream_owner> owner = owner_;
  auto deleter = [owner](void* q) noexcept { cudaFreeAsync(q, owner->stream); };
  return tensor(std::shared_ptr<void>(p, deleter), std::move(shape), type);
}

void cuda_backend::upload(tensor& dst, const void* host, size_t bytes) {
  if (bytes != dst.bytes())
    throw std::invalid_argument("cuda_backend::upload: " + std::to_string(bytes) +
                                " bytes for a tensor of " + std::to_string(dst.bytes()));
  void* d = dst.type() == dtype::f32 ? static_cast<void*>(dst.f32()) : dst.i32();
  if (bytes == 0)
    return;
  activate();
  CUDA_CHECK(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, stream()));
  // From pageable memory the copy has consumed `host` when it returns; from pinned memory
  // it has not, so wait there: the caller may reuse its buffer as soon as we return.
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, host));
  if (attributes.type == cudaMemoryTypeHost)
    CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void cuda_backend::download(const tensor& src, void* host, size_t bytes) {
  if (bytes != src.bytes())
    throw std::invalid_argument("cuda_backend::download: " + std::to_string(bytes) +
                                " bytes for a tensor of " + std::to_string(src.bytes()));
  const void* s = src.type() == dtype::f32 ? static_cast<const void*>(src.f32())
                                           : static_cast<const void*>(src.i32());
  if (bytes == 0)
    return;
  activate();
  CUDA_CHECK(cudaMemcpyAsync(host, s, bytes, cudaMemcpyDeviceToHost, stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void cuda_backend::copy(float* dst, const float* src, int64_t n) {
  if (n < 0)
    throw std::invalid_argument("cuda_backend::copy: negative count " + std::to_string(n));
  if (n == 0)
    return;
  activate();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(float),
                             cudaMemcpyDeviceToDevice, stream()));
}

double cuda_backend::sum_squares(const float* x, int64_t n) {
  return sum_squares_of({float_buffer{x, n}});
}

double cuda_backend::sum_squares_of(const std::vector<float_buffer>& buffers) {
  activate();
  reserve_results(std::max<size_t>(buffers.size(), 1));
  for (size_t i = 0; i < buffers.size(); ++i) // each into its slot, in stream order
    cuda_ops::sum_squares(results_device_ + i, buffers[i].data, buffers[i].n, *this, stream());
  CUDA_CHECK(cudaMemcpyAsync(results_host_, results_device_, buffers.size() * sizeof(double),
                             cudaMemcpyDeviceToHost, stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  double sum = 0;
  for (size_t i = 0; i < buffers.size(); ++i)
    sum += results_host_[i];
  return sum;
}

void* cuda_backend::get(size_t bytes) {
  if (bytes <= scratch_bytes_)
    return scratch_;
  // Stream-ordered: work already enqueued that reads the old scratch finishes first.
  if (scratch_ != nullptr)
    CUDA_CHECK(cudaFreeAsync(scratch_, stream()));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  size_t rounded = (bytes + (size_t{1} << 20) - 1) / (size_t{1} << 20) * (size_t{1} << 20);
  CUDA_CHECK(cudaMallocAsync(&scratch_, rounded, stream()));
  scratch_bytes_ = rounded;
  return scratch_;
}

} // namespace

std::unique_ptr<backend> make_cuda_backend(const backend_options& options) {
  return std::make_unique<cuda_backend>(options);
}

} // namespace deepcee::kernels
