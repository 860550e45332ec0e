#include "runtime/cluster/link_fit.hpp"

#include <algorithm>
#include <stdexcept>

namespace deepcee::runtime {

link_fit fit_round_trips(const std::vector<transfer_sample>& samples) {
  const double n = static_cast<double>(samples.size());
  double sx = 0, sy = 0;
  for (const auto& s : samples) {
    sx += s.bytes;
    sy += s.seconds;
  }
  const double mx = sx / std::max(n, 1.0), my = sy / std::max(n, 1.0);
  double sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    sxx += (s.bytes - mx) * (s.bytes - mx);
    sxy += (s.bytes - mx) * (s.seconds - my);
  }
  if (samples.size() < 2 || sxx <= 0)
    throw std::invalid_argument("a link fit needs transfers of at least two sizes");
  const double slope = sxy / sxx;
  if (!(slope > 0))
    throw std::invalid_argument("transfer times do not grow with their size");
  link_fit f;
  f.bandwidth_Bps = 1 / slope;
  f.latency_s = std::max(0.0, (my - slope * mx) / 2);
  return f;
}

} // namespace deepcee::runtime
