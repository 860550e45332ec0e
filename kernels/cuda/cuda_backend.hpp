#pragma once

#include "kernels/backend/backend.hpp"

namespace deepcee::kernels {

/// Number of CUDA devices visible (0 when the driver finds none; never throws).
int cuda_device_count();

/// Why a machine with an NVIDIA driver shows no CUDA device (a driver too old for this
/// build's CUDA, ...), in one line; empty where there is no driver or no failure.
std::string cuda_driver_problem();

/// cuBLAS for matrix products (fp32, or bf16 tensor cores when options.precision says
/// so), own kernels for the rest, all on one stream of options.device. Tensors are
/// allocated and freed in stream order on that stream; code that touches them from
/// another stream (NCCL, a second backend) must order itself against `synchronize()`.
/// `embedding_backward` adds into dwte with atomics, so its low bits may vary run to run.
std::unique_ptr<backend> make_cuda_backend(const backend_options& options);

} // namespace deepcee::kernels
