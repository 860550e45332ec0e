#pragma once

#include "kernels/backend/backend.hpp"

#include <functional>
#include <span>
#include <vector>

namespace deepcee::actors {

/// Sums rank r's buffers (per_rank[r], in its GPU's memory) across ranks, in place.
using gpu_all_reduce_fn =
    std::function<void(const std::vector<std::vector<std::span<float>>>& per_rank)>;

/// NCCL (kernels::nccl_group) over a stage's devices when there are two or more and all are
/// distinct CUDA GPUs of this process; empty otherwise (CPU devices, devices sharing a GPU),
/// and the devices use their ring of actor messages. Throws when NCCL cannot start (GPUs
/// this process does not see, a build without CUDA).
gpu_all_reduce_fn make_gpu_all_reduce(const std::vector<kernels::backend_options>& devices);

} // namespace deepcee::actors
