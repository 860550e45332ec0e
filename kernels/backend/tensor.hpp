#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace deepcee::kernels {

enum class dtype : uint8_t { f32, i32 };

inline size_t dtype_size(dtype) {
  return 4;
}

/// A dense, row-major array that lives in one backend's memory (host memory for the CPU
/// backend, device memory for CUDA). Copies share the storage; `clone` on the backend
/// makes a deep copy. The storage's deleter returns the memory to its backend.
class tensor {
public:
  tensor() = default;
  tensor(std::shared_ptr<void> storage, std::vector<int64_t> shape, dtype type)
      : storage_(std::move(storage)), shape_(std::move(shape)), type_(type) {}

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  dtype type() const { return type_; }
  int64_t numel() const {
    return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(type_); }
  bool empty() const { return storage_ == nullptr; }

  float* f32() { return static_cast<float*>(checked(dtype::f32)); }
  const float* f32() const { return static_cast<const float*>(checked(dtype::f32)); }
  int32_t* i32() { return static_cast<int32_t*>(checked(dtype::i32)); }
  const int32_t* i32() const { return static_cast<const int32_t*>(checked(dtype::i32)); }

  /// The storage whatever its dtype (copies in and out).
  void* raw() { return checked(type_); }
  const void* raw() const { return checked(type_); }

  /// The same storage seen with another shape of the same element count.
  tensor reshaped(std::vector<int64_t> shape) const {
    tensor t(storage_, std::move(shape), type_);
    if (t.numel() != numel())
      throw std::invalid_argument("tensor::reshaped: element count differs");
    return t;
  }

private:
  void* checked(dtype want) const {
    if (storage_ == nullptr)
      throw std::logic_error("tensor: access to an empty tensor");
    if (want != type_)
      throw std::logic_error("tensor: dtype mismatch");
    return storage_.get();
  }

  std::shared_ptr<void> storage_;
  std::vector<int64_t> shape_;
  dtype type_ = dtype::f32;
};

std::string shape_string(const std::vector<int64_t>& shape);

} // namespace deepcee::kernels
