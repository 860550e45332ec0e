#pragma once

#include "runtime/cluster/link_timeline.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

/// How long a device's work takes under the script, and when a stage's step begins. The
/// simulator (simulator_world.hpp), virtual time (virtual_cluster.hpp) and the stage actor's
/// wall time call these, so that their times cannot drift apart.
namespace deepcee::runtime {

/// How long `work_s` seconds of nominal compute take on a device of node `node` whose
/// working rate over time is `rates`, started at `start_s` (work_duration).
/// Throws job_stopped (simulator.hpp) when the node is killed, or stops for good, first:
/// the job cannot go on.
double work_duration_or_stop(const std::vector<device_piece>& rates, double start_s, double work_s,
                             const std::string& node);

/// When the order that starts a step at `t0_s` reaches a stage whose control link has
/// latency `latency_s`: the stage's optimizer step runs from then.
inline double order_arrives_s(double t0_s, double latency_s) {
  return t0_s + latency_s;
}

/// When a stage's first op of a step that the coordinator starts at `t0_s` may begin. The
/// start travels with the previous step's optimizer order and takes `latency_s` to arrive.
/// Then each of the stage's `devices` runs that optimizer step, which lasts
/// `optimizer_s(d, arrived_s)` for device `d` (by place). The step begins when the slowest
/// is done. The simulator and virtual time both begin their steps by this rule.
template <class OptimizerTime>
double step_begin_s(double t0_s, double latency_s, size_t devices, OptimizerTime&& optimizer_s) {
  const double arrived = order_arrives_s(t0_s, latency_s);
  double begin = arrived;
  for (size_t d = 0; d < devices; ++d)
    begin = std::max(begin, arrived + optimizer_s(d, arrived));
  return begin;
}

} // namespace deepcee::runtime
