#pragma once

#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/drift_tracker.hpp"
#include "runtime/adapt/environment_monitor.hpp"

#include <optional>
#include <vector>

namespace deepcee::runtime {

/// The adapter's one rule, which the adapter actor and simulate_adaptive both run, so that
/// the simulator predicts the decisions the running job takes: the monitor reads every
/// transfer of a step as it is reported, and each stage's compute when the step ends;
/// then, if a link or device entered or left drift during the step, the policy decides
/// once, on the estimates at the step's end, and its decision takes effect at the next
/// step. Deciding at the step's end rather than at the sample that revealed the drift
/// costs no step (nothing can take effect before the next step starts anyway) and makes
/// the decision independent of the order in which the links' samples arrive.
class step_adapter {
public:
  /// `profile` must outlive the adapter; `original` is the plan the job started with.
  step_adapter(const cluster& c, const model_spec& model, const profile_table& profile,
               const plan& original, drift_band band = {}, size_t window = 9,
               policy_options policy = {});

  void observe(const link_observation& o) { monitor_.observe(o); }

  /// The step ended. `in_force` is the plan that ran it, `stage_compute_s[p][s]` each
  /// stage's compute in the step (its ops' durations summed; empty where op times are not
  /// the cluster's, as in wall time), `latest` the plan ordered last (the policy's current
  /// plan; `in_force` unless a decision is still to take effect). Returns the policy's
  /// decision (keep included) when a drift began or ended, nothing otherwise; with `decide`
  /// false (a static run) only the estimates follow the step.
  std::optional<adapt_decision> end_step(const plan& in_force,
                                         const std::vector<std::vector<double>>& stage_compute_s,
                                         const plan& latest, bool decide = true);

  const environment_monitor& monitor() const { return monitor_; }

private:
  const model_spec* model_;
  const profile_table* profile_;
  plan original_;
  policy_options policy_;
  environment_monitor monitor_;
};

} // namespace deepcee::runtime
