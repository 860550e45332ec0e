#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/planner.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

enum class decision_kind { keep, rebalance, resplit, compression, restore, replan };

std::string_view to_string(decision_kind k);

struct adapt_decision {
  decision_kind kind = decision_kind::keep;
  plan next;             ///< the plan to run from the next step boundary (the current one on keep)
  double old_step_s = 0; ///< the current plan's predicted step time on the estimated cluster
  double new_step_s = 0; ///< the chosen plan's
  double move_s = 0;     ///< moving weights and AdamW moments (re-plan only)
  std::string reason;

  /// old / new: the predicted speed-up of the step.
  double predicted_gain() const { return new_step_s > 0 ? old_step_s / new_step_s : 1; }
};

struct policy_options {
  /// A candidate must predict a step at least this share faster than the current plan's,
  /// or the plan stays. This is the second hysteresis, after the monitor's bands. It keeps
  /// an estimate that wobbles around a boundary from moving micro-batches back and forth.
  double min_gain = 0.05;
  /// A re-plan must repay the time it spends moving weights and AdamW moments within this
  /// many steps of its gain. The disturbances the adapter answers last tens of steps: a
  /// link that degrades for a while, a device that slows. A re-plan that needs longer than
  /// 20 steps to break even would likely lose to the next change. The cheap changes
  /// (rebalance, resplit, compression) move no state and need no bound.
  int payback_steps = 20;
  bool allow_replan = true;
  /// The planner's options for a re-plan (its global batch is set to the current plan's).
  planner_options planner;
};

/// Chooses how to answer the environment the monitor estimates. Every candidate is scored
/// with the simulator on `estimated`, the cluster with the current estimates applied.
///
/// Rebalance moves micro-batches from slow pipelines to fast ones. Their sum, hence the
/// global batch, is unchanged. Resplit moves one sample at a time between the devices of a
/// stage with an affected device. Compression changes the send compression of a stage whose
/// transfers cross an affected link. Restore returns to the plan the job started with
/// (`original`) once the disturbance is gone. Replan runs the planner on `estimated`, when
/// its gain repays moving the state.
///
/// `affected` (environment_monitor::affected_devices) limits resplit and compression to what
/// drifted. Keeps the plan when no candidate gains more than options.min_gain.
///
/// The moves of a restore or re-plan are priced on `moves_on`: the estimated cluster with
/// the paths no transfer measured estimated too (runtime::move_cluster). So is the payback
/// test that reads their price.
adapt_decision choose_adaptation(const cluster& estimated, const cluster& moves_on,
                                 const model_spec& model, const profile_table& profile,
                                 const plan& current, const plan& original,
                                 const std::vector<int>& affected,
                                 const policy_options& options = {});

/// The same with the moves priced on `estimated` itself.
adapt_decision choose_adaptation(const cluster& estimated, const model_spec& model,
                                 const profile_table& profile, const plan& current,
                                 const plan& original, const std::vector<int>& affected,
                                 const policy_options& options = {});

/// Whether a change that predicts `new_step_s` steps against `old_step_s` and moves state
/// for `move_s` seconds is worth making: a step at least options.min_gain shorter, and the
/// move repaid within options.payback_steps steps of the gain.
bool worth_changing(double old_step_s, double new_step_s, double move_s,
                    const policy_options& options);

/// Seconds to move the weights and AdamW moments of every layer a device holds in `to` but
/// not in `from`. Each layer comes from a device that held it, over `c`'s links. Devices
/// receive in parallel, each one's layers one after another.
double state_move_seconds(const cluster& c, const model_spec& model, const plan& from,
                          const plan& to);

} // namespace deepcee::runtime
