#pragma once

#include "runtime/cluster/cluster.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// From `at_s` on, every device pair (x, y) with x inside `a` and y inside `b`, in both
/// directions, gets the given bandwidth and/or latency instead of the cluster's value. A
/// field left out keeps whatever applied before. Later changes (by time, then by file
/// order) win over earlier ones, whatever their specificity: the timeline is a script of
/// what happens to the network, not a second set of defaults.
struct link_change {
  double at_s = 0;
  link_endpoint a;
  link_endpoint b;
  std::optional<double> bandwidth_Bps;
  std::optional<double> latency_s;
  int64_t line = 0;
};

/// Piecewise-constant link parameters over time; empty means the cluster's links hold for
/// the whole run.
class link_timeline {
public:
  link_timeline() = default;
  /// Sorts by time (stable, so file order breaks ties). Throws std::invalid_argument on a
  /// negative time, a non-positive bandwidth or a negative latency.
  explicit link_timeline(std::vector<link_change> changes);

  const std::vector<link_change>& changes() const { return changes_; }
  bool empty() const { return changes_.empty(); }

  /// One piece of a directed device pair's history: `params` from `from_s` on.
  struct piece {
    double from_s = 0;
    link_params params;
  };
  /// The history of the link from device x to device y: the cluster's link at time 0
  /// followed by one piece per change that touches the pair.
  std::vector<piece> history(const cluster& c, int x, int y) const;

private:
  std::vector<link_change> changes_;
};

/// Seconds that `bytes` take to cross a link whose history is `pieces`, sent at `start_s`:
/// the latency in force at the start plus the time to drain the bytes while the
/// bandwidth changes (integrated over the pieces). Zero bytes still pay the latency.
double transfer_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                         double bytes);
/// Only the draining part (no latency): how long the bytes occupy the link.
double drain_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                      double bytes);
/// The parameters in force at `t_s`.
link_params params_at(const std::vector<link_timeline::piece>& pieces, double t_s);

} // namespace deepcee::runtime
