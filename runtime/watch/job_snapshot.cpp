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

void push_history(std::vector<double>& history, double loss, size_t keep) {
  history.push_back(loss);
  if (history.size() > keep)
    history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(keep));
}

} // namespace deepcee::runtime
