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
/// The estimate is the median of the last `window` samples rather than an EWMA: a median
/// of 9 ignores up to 4 outliers (a transfer that waited behind a retransmit, an op that
/// shared its core with the OS) where an EWMA would carry each one for many samples, and
/// it follows a step change completely after 5 samples, where an EWMA only approaches it.
/// The detector does not wait for the median: it counts consecutive samples outside the
/// band, so a 10x drop is declared after `min_samples` transfers, and then restarts the
/// window from those samples so that the estimate is the new level at once.
class drift_tracker {
public:
  explicit drift_tracker(double reference = 1.0, drift_band band = {}, size_t window = 9);

  /// Adds a sample; returns true when it changed the drift state, or when, drifted, the
  /// estimate moved out of the entering band around its level at the last such event (a
  /// link that fell 10x and then fell further, or came halfway back): what the plan was
  /// adapted to is stale then too.
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
