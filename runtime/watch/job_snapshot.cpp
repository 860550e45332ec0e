#include "runtime/watch/job_snapshot.hpp"

#include <algorithm>

namespace deepcee::runtime {

double busy_seconds(const std::vector<timeline_op>& ops) {
  double busy = 0;
  for (const auto& op : ops)
    busy += std::max(op.end_s - op.start_s, 0.0);
  return busy;
}

double bubble_share(const std::vector<timeline_op>& ops, double from_s, double to_s) {
  const double window = to_s - from_s;
  if (!(window > 0))
    return 0;
  return std::clamp(1.0 - busy_seconds(ops) / window, 0.0, 1.0);
}

} // namespace deepcee::runtime
