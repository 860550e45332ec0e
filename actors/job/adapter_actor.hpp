#pragma once

#include "actors/protocol/interfaces.hpp"

#include <map>
#include <vector>

namespace deepcee::actors {

/// The adapter's view of the network: per-link statistics from every link sample. Its
/// policy (rebalance when the links drift from the plan's) is a later issue; the samples
/// are kept (up to `max_samples`) for the run's trace.
struct adapter_state {
  static inline const char* name = "adapter";
  std::map<int, link_summary> links;
  std::map<int, double> delay_sum;
  std::vector<link_sample> samples;
  size_t max_samples = 1'000'000;
};

adapter_actor spawn_adapter(caf::actor_system& sys);

} // namespace deepcee::actors
