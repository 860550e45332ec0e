#pragma once

// Argument checks of an all-reduce over the devices of one process, apart from NCCL so that
// they are tested where no GPU is. Header-only: the CUDA library (deepcee_kernels_cuda) is
// linked after deepcee_kernels, so it cannot call into a .cpp of this folder.

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepcee::kernels {

/// Throws std::invalid_argument when `devices` is empty, lists an ordinal twice (naming it
/// and both ranks) or lists one outside [0, visible).
inline void check_device_ordinals(const std::vector<int>& devices, int visible) {
  if (devices.empty())
    throw std::invalid_argument("an all-reduce group needs at least one CUDA device");
  std::unordered_map<int, size_t> rank_of;
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    auto [it, added] = rank_of.emplace(devices[rank], rank);
    if (!added)
      throw std::invalid_argument("CUDA device " + std::to_string(devices[rank]) +
                                  " is listed twice in an all-reduce group (ranks " +
                                  std::to_string(it->second) + " and " + std::to_string(rank) +
                                  ")");
  }
  for (size_t rank = 0; rank < devices.size(); ++rank)
    if (devices[rank] < 0 || devices[rank] >= visible)
      throw std::invalid_argument(
          "CUDA device " + std::to_string(devices[rank]) + " (rank " + std::to_string(rank) +
          ") is not visible: " + std::to_string(visible) + " CUDA device(s) visible");
}

/// Throws std::invalid_argument unless `per_rank` holds one list per rank, every list has
/// as many buffers as rank 0's, buffer b has the same size on every rank, and no buffer
/// with elements has a null pointer. Each message names the rank and the buffer.
inline void check_all_reduce_layout(const std::vector<std::vector<std::span<float>>>& per_rank,
                                    size_t ranks) {
  if (per_rank.size() != ranks)
    throw std::invalid_argument("all-reduce: " + std::to_string(per_rank.size()) +
                                " buffer lists for a group of " + std::to_string(ranks) + " ranks");
  if (ranks == 0)
    return;
  const auto& first = per_rank[0];
  for (size_t rank = 0; rank < ranks; ++rank) {
    const auto& buffers = per_rank[rank];
    if (buffers.size() != first.size())
      throw std::invalid_argument("all-reduce: rank " + std::to_string(rank) + " has " +
                                  std::to_string(buffers.size()) + " buffers, rank 0 has " +
                                  std::to_string(first.size()));
    for (size_t b = 0; b < buffers.size(); ++b) {
      if (buffers[b].size() != first[b].size())
        throw std::invalid_argument("all-reduce: buffer " + std::to_string(b) + " has " +
                                    std::to_string(buffers[b].size()) + " elements on rank " +
                                    std::to_string(rank) + " but " +
                                    std::to_string(first[b].size()) + " on rank 0");
      if (!buffers[b].empty() && buffers[b].data() == nullptr)
        throw std::invalid_argument("all-reduce: buffer " + std::to_string(b) + " of rank " +
                                    std::to_string(rank) + " is a null pointer with " +
                                    std::to_string(buffers[b].size()) + " elements");
    }
  }
}

} // namespace deepcee::kernels
