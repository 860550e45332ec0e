#include "runtime/watch/run_history.hpp"

namespace deepcee::runtime {

void thinned_series::add(int step, double value) {
  if (!points_.empty() && step - points_.back().step < spacing_)
    return;
  points_.push_back({step, value});
  if (points_.size() <= capacity_)
    return;
  std::vector<series_point> kept;
  kept.reserve(capacity_);
  for (size_t i = 0; i < points_.size(); i += 2)
    kept.push_back(points_[i]);
  points_ = std::move(kept);
  spacing_ *= 2;
}

} // namespace deepcee::runtime
