#include "kernels/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace deepcee::kernels {

/// Free blocks by size. Shared with the deleters of the tensors it handed out, so a
/// tensor that outlives its backend still returns its memory safely.
class cpu_backend::block_pool {
public:
  ~block_pool() {
    for (auto& [_, blocks] : free_)
      for (void* p : blocks)
        std::free(p);
  }

  void* take(size_t bytes) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) {
      // Blocks of other sizes may be what stands in the way: return them and try again.
      release_all();
      p = std::aligned_alloc(64, bytes);
    }
    if (p == nullptr)
      throw std::bad_alloc();
    return p;
  }

  /// Called by tensor deleters, also while a bad_alloc unwinds: it must neither throw nor
  /// need memory it cannot get, so a block that cannot be listed is freed instead.
  void give_back(void* p, size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    try {
      free_[bytes].push_back(p);
    } catch (...) {
      std::free(p);
    }
  }

private:
  /// With mutex_ held.
  void release_all() noexcept {
    for (auto& [_, blocks] : free_) {
      for (void* p : blocks)
        std::free(p);
      blocks.clear();
    }
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
};

cpu_backend::cpu_backend(int threads) : threads_(threads), pool_(std::make_shared<block_pool>()) {
  if (threads > 0)
    openblas_set_num_threads(threads);
}

std::string cpu_backend::name() const {
  return "cpu (OpenBLAS, " + (threads_ > 0 ? std::to_string(threads_) : std::string("default")) +
         " threads)";
}

tensor cpu_backend::alloc(std::vector<int64_t> shape, dtype type) {
  for (int64_t d : shape)
    if (d < 0)
      throw std::invalid_argument("cpu_backend::alloc: negative dimension in " +
                                  shape_string(shape));
  tensor probe(nullptr, shape, type);
  size_t bytes = std::max<size_t>(probe.bytes(), 64);
  bytes = (bytes + 63) / 64 * 64;
  void* p = pool_->take(bytes);
  auto deleter = [pool = pool_, bytes](void* q) noexcept { pool->give_back(q, bytes); };
  return tensor(std::shared_ptr<void>(p, deleter), std::move(shape), type);
}

void cpu_backend::upload(tensor& dst, const void* host, size_t bytes) {
  if (bytes != dst.bytes())
    throw std::invalid_argument("cpu_backend::upload: size mismatch");
  std::memcpy(dst.raw(), host, bytes);
}

void cpu_backend::download(const tensor& src, void* host, size_t bytes) {
  if (bytes != src.bytes())
    throw std::invalid_argument("cpu_backend::download: size mismatch");
  std::memcpy(host, src.raw(), bytes);
}

void cpu_backend::copy(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void cpu_backend::fill(float* x, float value, int64_t n) {
  std::fill(x, x + n, value);
}

void cpu_backend::gemm(const gemm_desc& d, const float* a, const float* b, float* c) {
  for (int i = 0; i < d.batch; ++i)
    cblas_sgemm(CblasRowMajor, d.trans_a ? CblasTrans : CblasNoTrans,
                d.trans_b ? CblasTrans : CblasNoTrans, d.m, d.n, d.k, d.alpha, a + i * d.stride_a,
                d.lda, b + i * d.stride_b, d.ldb, d.beta, c + i * d.stride_c, d.ldc);
}

void cpu_backend::add_bias(float* y, const float* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    for (int64_t j = 0; j < cols; ++j)
      row[j] += bias[j];
  }
}

void cpu_backend::bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
    for (int64_t j = 0; j < cols; ++j)
      dbias[j] += row[j];
  }
}

void cpu_backend::add(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

void cpu_backend::axpy(float* y, float alpha, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += alpha * x[i];
}

void cpu_backend::scale(float* x, float alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] *= alpha;
}

double cpu_backend::sum_squares(const float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

} // namespace deepcee::kernels
