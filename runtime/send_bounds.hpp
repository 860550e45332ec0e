#pragma once

#include "runtime/schedule.hpp"
#include "runtime/virtual_cluster.hpp"

#include <limits>
#include <vector>

/// Lower bounds on when a stage will next send, in virtual time: the promises ("null
/// messages") of conservative synchronisation that let a shared link commit transfers.
/// Pure logic over what the stage knows at a moment; the actors publish the results.
namespace deepcee::runtime {

constexpr double never_s = std::numeric_limits<double>::infinity();
constexpr double unknown_s = -std::numeric_limits<double>::infinity();

/// What a stage knows in the middle of a step. Times are virtual seconds; `unknown_s`
/// where nothing is known yet.
struct stage_progress {
  const std::vector<schedule_op>* ops = nullptr;
  size_t next_op = 0;               ///< the first op not executed yet
  double free_at = 0;               ///< the end of the last executed op (the step's start before)
  bool first = false;               ///< no previous stage: forward inputs are the stage's own data
  bool last = false;                ///< no next stage: the loss gives the backward inputs
  bool fused_backward = false;      ///< the input gradient leaves when W ends (B and W fused)
  double f = 0, b = 0, w = 0;       ///< op durations
  std::vector<double> f_end, b_end; ///< per micro-batch: executed ops' ends, else unknown_s
  /// Per micro-batch: a lower bound on when the activation (gradient) that F (B) needs
  /// arrives; the exact arrival once known. Unused for the first (last) stage.
  std::vector<double> activation_in, gradient_in;
};

/// Lower bounds on the send times of the stage's next activation and next gradient;
/// `never_s` when its op list sends none any more.
struct send_bounds {
  double activation = never_s;
  double gradient = never_s;
};

/// Walks the remaining ops in list order: each starts no earlier than the previous one's
/// end and its input's bound, and lasts its duration; a send happens when its op ends.
send_bounds next_send_bounds(const stage_progress& p);

/// The least time any transfer of these parts can take: the smallest latency and the
/// largest bandwidth that each part's link ever has (queueing only adds to it).
double min_transit(const std::vector<transfer_part>& parts);

/// A lower bound on the arrival of a transfer sent at `send_s` that takes at least
/// `transit_s`, kept a few ulps low so that rounding in the link model's own sums never
/// puts the bound above the real arrival.
double arrival_bound(double send_s, double transit_s);

} // namespace deepcee::runtime
