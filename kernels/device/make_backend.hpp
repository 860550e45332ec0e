#pragma once

#include "kernels/backend/backend.hpp"

#include <memory>
#include <string>

namespace deepcee::kernels {

/// Makes the backend the options ask for. Throws std::runtime_error with a one-line
/// reason when it cannot: CUDA asked for in a build without it, or no GPU visible.
std::unique_ptr<backend> make_backend(const backend_options& options);

/// Number of CUDA devices visible to this process (0 in a build without CUDA).
int visible_cuda_devices();

/// Why none is, in one line: no GPU, a GPU whose driver CUDA cannot use (too old for this
/// build, ...), or a build without CUDA.
std::string no_cuda_devices_reason();

} // namespace deepcee::kernels
