#pragma once

#include "runtime/adapt/active_probe.hpp"
#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/drift_tracker.hpp"
#include "runtime/adapt/environment_monitor.hpp"

#include <optional>
#include <vector>

namespace deepcee::runtime {

/// The adapter's one rule. The adapter actor and simulate_adaptive both run it, so the
/// simulator predicts the decisions the running job takes. The monitor reads every transfer
/// of a step as it is reported, and each stage's compute when the step ends. If a link or
/// device entered or left drift during the step, the policy then decides once, on the
/// estimates at the step's end. Its decision takes effect at the next step. Deciding at the
/// step's end costs no step, since nothing can take effect before the next step starts. It
/// also makes the decision independent of the order in which the links' samples arrive.
///
/// A drift that comes back within policy_options::payback_steps of a restore is a flap.
/// After a flap, when a drift ends, the policy waits for calm_needed_ steps with nothing
/// drifted before it may restore. That wait is 4 probe periods, doubled at each flap, and
/// at most 4 payback horizons. Probing of what the plan leaves out goes on meanwhile.
///
/// At the same step end it also says which active probes the next boundary sends
/// (probes_due). While a drifted link or device is out of the plan that runs next, that is
/// one round every probe_options::every_steps steps. The caller runs the round (run_probes)
/// on the job's link model at the boundary, and holds the next step's start by its hold_s.
/// It hands what the round saw to observe_probes. The next step's end decides on it like on
/// any sample.
class step_adapter {
public:
  /// `profile` must outlive the adapter; `original` is the plan the job started with.
  step_adapter(const cluster& c, const model_spec& model, const profile_table& profile,
               const plan& original, drift_band band = {}, size_t window = 9,
               policy_options policy = {}, probe_options probes = {});

  void observe(const link_observation& o) { monitor_.observe(o); }
  /// Devices compared with their own first steps (environment_monitor::calibrate_devices).
  void calibrate_devices(drift_band band) { monitor_.calibrate_devices(band); }

  /// The step ended. `in_force` is the plan that ran it. `stage_compute_s[p][s]` is each
  /// stage's compute in the step, its ops' durations summed (empty: not measured). `latest` is the
  /// plan ordered last, the policy's current plan: `in_force` unless a decision is still to take
  /// effect. Returns the policy's decision (keep included) when a drift began or ended, nothing
  /// otherwise. With `decide` false (a static run) only the estimates follow the step.
  std::optional<adapt_decision> end_step(const plan& in_force,
                                         const std::vector<std::vector<double>>& stage_compute_s,
                                         const plan& latest, bool decide = true);

  /// After end_step: the probes the boundary after the step sends, `next` being the plan
  /// that runs the next step and `step_s` the step's time (it sizes the probes). Empty
  /// unless a round is due. A boundary where a re-plan moves state (`next` has another
  /// layout than the plan that ran the step) sends none: the moves use the links, and the
  /// round waits for the next boundary.
  probe_round probes_due(const plan& ran, const plan& next, double step_s);

  /// What a round saw (run_probes), in the order it was sent.
  void observe_probes(const probe_outcome& seen);

  /// Nodes were lost and `survivors` runs the job now: the plan to come back to once a
  /// drift ends, in place of the one the job started with.
  void rebase(const plan& survivors) { original_ = survivors; }

  const environment_monitor& monitor() const { return monitor_; }
  const probe_options& probing() const { return probes_; }

private:
  const model_spec* model_;
  const profile_table* profile_;
  plan original_;
  policy_options policy_;
  probe_options probes_;
  environment_monitor monitor_;
  int unprobed_steps_ = 0;    ///< steps since probing became needed or since the last round
  long steps_ = 0;            ///< end_step calls
  long calm_since_ = -1;      ///< the step from which nothing has drifted (-1: something has)
  long restored_at_ = -1;     ///< the step of the last restore decision, until a drift follows
  long calm_needed_ = 0;      ///< steps of calm a restore waits for (0 until a flap)
  bool waiting_calm_ = false; ///< a drift ended, and the policy waits for calm_needed_
};

} // namespace deepcee::runtime
