#pragma once

// No CUDA or NCCL header here: the actors library is compiled by g++ without the CUDA
// include path and includes this file under DEEPCEE_HAVE_CUDA. Communicators and streams
// live in the implementation.

#include <chrono>
#include <memory>
#include <span>
#include <vector>

namespace deepcee::kernels {

/// The GPUs of this process as one NCCL clique: rank r is CUDA device `devices()[r]`, with
/// its own communicator and its own stream. Not thread-safe: one thread (the group actor's)
/// makes every call. After a failure inside an all-reduce (a CUDA or NCCL error, or the
/// timeout) the communicators are aborted and every later call throws: make a new group.
class nccl_group {
public:
  static constexpr std::chrono::milliseconds default_timeout{120'000};

  /// Creates the communicators (ncclCommInitAll) and grants every rank's GPU access to the
  /// other ranks' current memory pools, where the CUDA backend allocates: within one
  /// process NCCL touches peers' buffers directly. Throws std::invalid_argument when
  /// `devices` is empty, lists an ordinal twice or one that is not visible, and
  /// std::runtime_error when CUDA or NCCL fails. `timeout` bounds each all_reduce_sum.
  explicit nccl_group(std::vector<int> devices,
                      std::chrono::milliseconds timeout = default_timeout);
  ~nccl_group();
  nccl_group(nccl_group&&) noexcept;
  nccl_group& operator=(nccl_group&&) noexcept;
  nccl_group(const nccl_group&) = delete;
  nccl_group& operator=(const nccl_group&) = delete;

  int ranks() const;
  const std::vector<int>& devices() const;

  /// Sums buffer b across ranks, in place, for every b. Afterwards per_rank[r][b] holds
  /// the elementwise sum over every rank's buffer b. The buffers per_rank[r] are rank r's,
  /// in memory of device devices()[r]. They are already written: the caller has
  /// synchronized the stream that wrote them. Every rank lists as many buffers, of the same
  /// sizes.
  /// Returns once every rank's stream has finished. Throws std::invalid_argument for a
  /// layout that does not match (naming the rank and buffer), std::runtime_error naming
  /// the rank and the CUDA/NCCL error, or the timeout.
  void all_reduce_sum(const std::vector<std::vector<std::span<float>>>& per_rank);

private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace deepcee::kernels
