#pragma once

#include <vector>

namespace deepcee::runtime {

/// One timed transfer: `bytes` sent one way, `seconds` until its small reply arrived.
struct transfer_sample {
  double bytes = 0;
  double seconds = 0;
};

/// A link as time = latency + bytes / bandwidth.
struct link_fit {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};

/// Least squares of round trips t = a + bytes * s over the samples (several sizes). Then
/// latency = a / 2, since the round trip crosses the link twice and the reply is a few
/// bytes, and bandwidth = 1 / s. Throws std::invalid_argument with fewer than two distinct sizes or
/// a slope that is not positive (times that do not grow with the size cannot give one).
link_fit fit_round_trips(const std::vector<transfer_sample>& samples);

} // namespace deepcee::runtime
