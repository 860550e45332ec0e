#include "kernels/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <filesystem>
#include <string>

namespace deepcee::kernels {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

std::string cuda_driver_problem() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status == cudaSuccess || status == cudaErrorNoDevice ||
      !std::filesystem::exists("/proc/driver/nvidia/version"))
    return {};
  return std::string("the NVIDIA driver is there, but CUDA says ") + cudaGetErrorName(status) +
         ": " + cudaGetErrorString(status);
}

} // namespace deepcee::kernels
