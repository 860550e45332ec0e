#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/sim/virtual_cluster.hpp"

#include <vector>

namespace deepcee::runtime {

/// A FIFO resource (transfer_part::link) that more than one stage sends on, e.g. the WAN
/// pipe between two regions that several pipelines cross. Its transfers must be ordered
/// across senders (conservative synchronisation); a link with one sender keeps its order
/// on that sender alone.
struct shared_link {
  int link = 0;
  std::vector<int> senders; ///< flat stage indices (pipeline by pipeline), ascending
};

/// Every shared link of the plan, by ascending link index.
std::vector<shared_link> shared_links(const virtual_cluster& vc, const plan& p);

} // namespace deepcee::runtime
