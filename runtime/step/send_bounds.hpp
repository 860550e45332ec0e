#pragma once

#include "runtime/schedule/op_readiness.hpp"
#include "runtime/schedule/schedule.hpp"
#include "runtime/sim/virtual_cluster.hpp"

#include <limits>
#include <vector>

/// Lower bounds on when a stage will next send, in virtual time: the promises ("null
/// messages") of conservative synchronisation that let a shared link commit transfers.
/// Pure logic over what the stage knows at a moment; the actors publish the results.
namespace deepcee::runtime {

constexpr double never_s = std::numeric_limits<double>::infinity();
constexpr double unknown_s = -std::numeric_limits<double>::infinity();

/// What a stage knows in the middle of a step. Times are virtual seconds.
struct stage_progress {
  const std::vector<schedule_op>* ops = nullptr;
  size_t next_op = 0;         ///< the first op not executed yet
  double free_at = 0;         ///< the end of the last executed op (the step's start before)
  double f = 0, b = 0, w = 0; ///< op durations
  /// The stage's readiness, with every input that is not there yet given a lower bound on
  /// its arrival (`unknown_s` where none is known): the exact arrival once known.
  stage_readiness readiness;
};

/// Lower bounds on the send times of the stage's next activation and next gradient;
/// `never_s` when its op list sends none any more.
struct send_bounds {
  double activation = never_s;
  double gradient = never_s;
};

/// Walks the remaining ops in list order: each starts no earlier than the previous one's
/// end and its input's bound, and lasts its duration; a send happens when the op that
/// releases it ends (op_readiness.hpp).
send_bounds next_send_bounds(const stage_progress& p);

/// The least time any transfer of these parts can take: the smallest latency and the
/// largest bandwidth that each part's link ever has (queueing only adds to it).
double min_transit(const std::vector<transfer_part>& parts);

/// A lower bound on the arrival of a transfer sent at `send_s` that takes at least
/// `transit_s`, kept a few ulps low so that rounding in the link model's own sums never
/// puts the bound above the real arrival.
double arrival_bound(double send_s, double transit_s);

} // namespace deepcee::runtime
