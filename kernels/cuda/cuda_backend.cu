// Placeholder until the CUDA backend lands (being written now).
#include "kernels/cuda/cuda_backend.hpp"

#include <stdexcept>

namespace deepcee::kernels {
std::unique_ptr<backend> make_cuda_backend(const backend_options&) {
  throw std::runtime_error("CUDA backend not implemented yet");
}
} // namespace deepcee::kernels
