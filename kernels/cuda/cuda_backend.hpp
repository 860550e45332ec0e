#pragma once

#include "kernels/backend.hpp"

namespace deepcee::kernels {

/// Number of CUDA devices visible (0 when the driver finds none; never throws).
int cuda_device_count();

/// cuBLAS for matrix products (fp32, or bf16 tensor cores when options.precision says
/// so), own kernels for the rest, all on one stream of options.device.
std::unique_ptr<backend> make_cuda_backend(const backend_options& options);

} // namespace deepcee::kernels
