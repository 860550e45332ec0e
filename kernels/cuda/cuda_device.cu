#include "kernels/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

namespace deepcee::kernels {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

} // namespace deepcee::kernels
