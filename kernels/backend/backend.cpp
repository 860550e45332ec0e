#include "kernels/backend/backend.hpp"

#include <stdexcept>

namespace deepcee::kernels {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

double backend::sum_squares_of(const std::vector<float_buffer>& buffers) {
  double sum = 0;
  for (const auto& b : buffers)
    sum += sum_squares(b.data, b.n);
  return sum;
}

backend_kind parse_backend_kind(const std::string& name) {
  if (name == "cpu")
    return backend_kind::cpu;
  if (name == "cuda")
    return backend_kind::cuda;
  throw std::invalid_argument("unknown device '" + name + "' (expected cpu or cuda)");
}

} // namespace deepcee::kernels
