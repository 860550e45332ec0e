#include "runtime/adapt/step_adapter.hpp"

#include "runtime/adapt/path_estimates.hpp"
#include "runtime/plan/plan_allocation.hpp"

#include <algorithm>

namespace deepcee::runtime {

step_adapter::step_adapter(const cluster& c, const model_spec& model, const profile_table& profile,
                           const plan& original, drift_band band, size_t window,
                           policy_options policy, probe_options probes)
    : model_(&model), profile_(&profile), original_(original), policy_(std::move(policy)),
      probes_(probes), monitor_(c, profile, original, band, window) {}

std::optional<adapt_decision>
step_adapter::end_step(const plan& in_force,
                       const std::vector<std::vector<double>>& stage_compute_s, const plan& latest,
                       bool decide) {
  // The op times the monitor expects are those of the plan that ran the step.
  monitor_.rebase(in_force);
  for (size_t p = 0; p < stage_compute_s.size() && p < in_force.pipelines.size(); ++p)
    for (size_t s = 0; s < stage_compute_s[p].size() && s < in_force.pipelines[p].stages.size();
         ++s)
      if (stage_compute_s[p][s] > 0) // a stage always computes: 0 means not measured
        monitor_.observe_stage_compute(in_force.pipelines[p].stages[s].devices,
                                       stage_compute_s[p][s]);
  ++steps_;
  const auto affected = monitor_.affected_devices();
  const bool calm = affected.empty();
  if (!calm)
    calm_since_ = -1;
  else if (calm_since_ < 0)
    calm_since_ = steps_;
  // A drift that begins again soon after a restore: the link or device flaps. Each flap
  // doubles the calm the next restore waits for (from probe_options::every_steps x 4), so
  // a square wave ends on the plan that holds up in both phases instead of paying a move
  // at every edge.
  if (monitor_.changed() && !calm && restored_at_ >= 0 &&
      steps_ - restored_at_ <= std::max(policy_.payback_steps, 1)) {
    calm_needed_ = std::min<long>(calm_needed_ > 0 ? 2 * calm_needed_ : 4 * probes_.every_steps,
                                  4 * std::max(policy_.payback_steps, 1));
    restored_at_ = -1;
  }
  if (!monitor_.changed() && !waiting_calm_)
    return std::nullopt;
  monitor_.acknowledge();
  if (!decide)
    return std::nullopt;
  waiting_calm_ = calm && calm_needed_ > 0 && steps_ - calm_since_ < calm_needed_;
  if (waiting_calm_)
    return std::nullopt;
  auto d = choose_adaptation(monitor_.estimated_cluster(), move_cluster(monitor_), *model_,
                             *profile_, latest, original_, affected, policy_);
  if (d.kind == decision_kind::restore)
    restored_at_ = steps_;
  return d;
}

probe_round step_adapter::probes_due(const plan& ran, const plan& next, double step_s) {
  if (!same_layout(ran, next))
    return {};
  auto round = probes_needed(monitor_, next, step_s, probes_, waiting_calm_);
  if (round.empty()) {
    unprobed_steps_ = 0;
    return {};
  }
  // The step that made probing needed measured the link or device itself: wait a full
  // period before the first round, then one round every period.
  if (++unprobed_steps_ < std::max(probes_.every_steps, 1))
    return {};
  unprobed_steps_ = 0;
  return round;
}

void step_adapter::observe_probes(const probe_outcome& seen) {
  for (const auto& o : seen.transfers)
    monitor_.observe(o);
  for (const auto& [device, slowdown] : seen.slowdowns)
    monitor_.observe_slowdown(device, slowdown);
}

} // namespace deepcee::runtime
