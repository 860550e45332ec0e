#pragma once

// Error checking for CUDA, cuBLAS and NCCL calls. Each macro throws std::runtime_error
// with the file, the line, the call as written and the library's error string, so a
// failure far from the caller still says exactly what went wrong. Only for host code.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace deepcee::kernels::cuda_detail {

[[noreturn]] inline void throw_error(const char* library, const char* call, const char* file,
                                     int line, const std::string& what) {
  throw std::runtime_error(std::string(library) + " error at " + file + ":" + std::to_string(line) +
                           ": " + call + " -> " + what);
}

[[noreturn]] inline void throw_invalid(const char* condition, const char* file, int line,
                                       const std::string& what) {
  throw std::invalid_argument(std::string(file) + ":" + std::to_string(line) + ": " + what + " (" +
                              condition + " does not hold)");
}

} // namespace deepcee::kernels::cuda_detail

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t deepcee_status_ = (call);                                                          \
    if (deepcee_status_ != cudaSuccess)                                                            \
      ::deepcee::kernels::cuda_detail::throw_error(                                                \
          "CUDA", #call, __FILE__, __LINE__,                                                       \
          std::string(cudaGetErrorName(deepcee_status_)) + ": " +                                  \
              cudaGetErrorString(deepcee_status_));                                                \
  } while (0)

#define CUBLAS_CHECK(call)                                                                         \
  do {                                                                                             \
    cublasStatus_t deepcee_status_ = (call);                                                       \
    if (deepcee_status_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::deepcee::kernels::cuda_detail::throw_error(                                                \
          "cuBLAS", #call, __FILE__, __LINE__,                                                     \
          std::string(cublasGetStatusName(deepcee_status_)) + ": " +                               \
              cublasGetStatusString(deepcee_status_));                                             \
  } while (0)

#define NCCL_CHECK(call)                                                                           \
  do {                                                                                             \
    ncclResult_t deepcee_status_ = (call);                                                         \
    if (deepcee_status_ != ncclSuccess)                                                            \
      ::deepcee::kernels::cuda_detail::throw_error("NCCL", #call, __FILE__, __LINE__,              \
                                                   ncclGetErrorString(deepcee_status_));           \
  } while (0)

/// Checks the launch that was just issued (bad configuration, missing kernel image).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

/// Shape and argument checks at the launchers: throws std::invalid_argument.
#define CUDA_REQUIRE(condition, what)                                                              \
  do {                                                                                             \
    if (!(condition))                                                                              \
      ::deepcee::kernels::cuda_detail::throw_invalid(#condition, __FILE__, __LINE__, (what));      \
  } while (0)
