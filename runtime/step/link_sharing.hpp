#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/sim/virtual_cluster.hpp"

#include <vector>

namespace deepcee::runtime {

/// A sharing group (transfer_part::link: transfers whose FIFO resources overlap) that more
/// than one stage sends on, e.g. the WAN path between two regions that several pipelines
/// cross, or one node's interface that several stages send through. Its transfers must be
/// ordered across senders (conservative synchronisation); a group with one sender keeps
/// its order on that sender alone.
struct shared_link {
  int link = 0;
  std::vector<int> senders; ///< flat stage indices (pipeline by pipeline), ascending
};

/// Every shared link of the plan, by ascending link index.
std::vector<shared_link> shared_links(const virtual_cluster& vc, const plan& p);

} // namespace deepcee::runtime
