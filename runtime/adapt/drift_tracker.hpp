#pragma once

#include <cstddef>
#include <deque>

namespace deepcee::runtime {

/// When a measured quantity counts as drifted from what the plan assumed, as ratios
/// measured / assumed. A drift is declared once `min_samples` consecutive samples lie
/// outside [enter_low, enter_high] on the same side, and cleared only once `min_samples`
/// consecutive samples lie inside the tighter [clear_low, clear_high]. The gap between the
/// two bands is the hysteresis: a level near a band's edge cannot make the state flap, and
/// +-20% noise (ratios 0.8..1.2) never leaves the outer band.
struct drift_band {
  double enter_low = 0.67;
  double enter_high = 1.5;
  double clear_low = 0.8;
  double clear_high = 1.25;
  int min_samples = 3;
};

/// One quantity's robust estimate and drift state.
///
/// The estimate is the median of the last `window` samples rather than an EWMA. A median
/// of 9 ignores up to 4 outliers, such as a transfer that waited behind a retransmit or an
/// op that shared its core with the OS. An EWMA would carry each one for many samples. The
/// median also follows a step change completely after 5 samples, where an EWMA only
/// approaches it.
///
/// The detector does not wait for the median. It counts consecutive samples outside the
/// band, so a 10x drop is declared after `min_samples` transfers. It then restarts the
/// window from those samples, so that the estimate is the new level at once.
class drift_tracker {
public:
  explicit drift_tracker(double reference = 1.0, drift_band band = {}, size_t window = 9);

  /// Adds a sample. Returns true when it changed the drift state. While drifted, also
  /// returns true when the estimate moved out of the entering band around its level at the
  /// last such event: a link that fell 10x and then fell further, or came halfway back.
  /// What the plan was adapted to is then stale too.
  bool add(double value);

  double reference() const { return reference_; }
  /// Median of the window; the reference while no sample came.
  double estimate() const;
  /// estimate() / reference().
  double ratio() const { return estimate() / reference_; }
  bool drifted() const { return drifted_; }
  long samples() const { return samples_; }

private:
  /// Keeps only the last `n` samples of the window.
  void restart_window(size_t n);

  double reference_;
  drift_band band_;
  size_t window_;
  std::deque<double> values_;
  bool drifted_ = false;
  double level_ = 0; ///< the estimate at the last event while drifted
  int run_ = 0;      ///< consecutive samples that point to the other state
  int run_side_ = 0; ///< -1 below, +1 above the band (entering only)
  long samples_ = 0;
};

} // namespace deepcee::runtime
