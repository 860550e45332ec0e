#include "runtime/adapt/drift_tracker.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace deepcee::runtime {

drift_tracker::drift_tracker(double reference, drift_band band, size_t window)
    : reference_(reference), band_(band), window_(std::max<size_t>(window, 1)) {
  if (!(reference > 0))
    throw std::invalid_argument("drift_tracker: the reference must be positive");
  if (!(band.enter_low < band.clear_low && band.clear_low <= 1 && 1 <= band.clear_high &&
        band.clear_high < band.enter_high) ||
      band.min_samples < 1)
    throw std::invalid_argument("drift_tracker: the clearing band must lie strictly inside the "
                                "entering band, around 1, and min_samples be at least 1");
}

bool drift_tracker::add(double value) {
  ++samples_;
  values_.push_back(value);
  if (values_.size() > window_)
    values_.pop_front();
  const double r = value / reference_;
  if (!drifted_) {
    const int side = r < band_.enter_low ? -1 : r > band_.enter_high ? 1 : 0;
    run_ = side == 0 ? 0 : side == run_side_ ? run_ + 1 : 1;
    run_side_ = side;
  } else {
    const bool inside = r >= band_.clear_low && r <= band_.clear_high;
    run_ = inside ? run_ + 1 : 0;
  }
  if (run_ >= band_.min_samples) {
    drifted_ = !drifted_;
    restart_window(static_cast<size_t>(run_));
    run_ = 0;
    run_side_ = 0;
    level_ = estimate();
    return true;
  }
  if (!drifted_)
    return false;
  const double moved = estimate() / level_;
  if (moved >= band_.enter_low && moved <= band_.enter_high)
    return false;
  level_ = estimate();
  return true;
}

double drift_tracker::estimate() const {
  if (values_.empty())
    return reference_;
  // The lower median: always one of the samples, so that a window half old level, half
  // new does not report a level that never was.
  std::vector<double> v(values_.begin(), values_.end());
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

void drift_tracker::restart_window(size_t n) {
  while (values_.size() > n)
    values_.pop_front();
}

} // namespace deepcee::runtime
