#include "kernels/device/make_backend.hpp"

#include "kernels/cpu/cpu_backend.hpp"
#ifdef DEEPCEE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

#include <stdexcept>

namespace deepcee::kernels {

int visible_cuda_devices() {
#ifdef DEEPCEE_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

std::string no_cuda_devices_reason() {
#ifdef DEEPCEE_HAVE_CUDA
  const auto problem = cuda_driver_problem();
  return problem.empty() ? "no CUDA GPU is visible to this process" : problem;
#else
  return "this build has no CUDA backend (nvcc was not found when it was built)";
#endif
}

std::unique_ptr<backend> make_backend(const backend_options& options) {
  if (options.kind == backend_kind::cpu)
    return std::make_unique<cpu_backend>(options.threads);
#ifdef DEEPCEE_HAVE_CUDA
  int count = cuda_device_count();
  if (count == 0)
    throw std::runtime_error("--device cuda: " + no_cuda_devices_reason());
  if (options.device < 0 || options.device >= count)
    throw std::runtime_error("--device cuda: device " + std::to_string(options.device) +
                             " asked for, but only " + std::to_string(count) + " visible");
  return make_cuda_backend(options);
#else
  throw std::runtime_error(
      "--device cuda: this build has no CUDA backend (nvcc was not found when it was built)");
#endif
}

} // namespace deepcee::kernels
