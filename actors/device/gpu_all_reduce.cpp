#include "actors/device/gpu_all_reduce.hpp"

#ifdef DEEPCEE_HAVE_CUDA
#include "kernels/cuda/nccl_group.hpp"
#endif

#include <memory>
#include <set>
#include <stdexcept>

namespace deepcee::actors {

gpu_all_reduce_fn make_gpu_all_reduce(const std::vector<kernels::backend_options>& devices) {
  std::vector<int> ordinals;
  for (const auto& d : devices) {
    if (d.kind != kernels::backend_kind::cuda)
      return {};
    ordinals.push_back(d.device);
  }
  if (ordinals.size() < 2 ||
      std::set<int>(ordinals.begin(), ordinals.end()).size() != ordinals.size())
    return {};
#ifdef DEEPCEE_HAVE_CUDA
  auto nccl = std::make_shared<kernels::nccl_group>(ordinals);
  return [nccl](const std::vector<std::vector<std::span<float>>>& per_rank) {
    nccl->all_reduce_sum(per_rank);
  };
#else
  throw std::runtime_error("this build has no CUDA backend (nvcc was not found)");
#endif
}

} // namespace deepcee::actors
