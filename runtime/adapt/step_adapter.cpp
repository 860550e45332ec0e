#include "runtime/adapt/step_adapter.hpp"

namespace deepcee::runtime {

step_adapter::step_adapter(const cluster& c, const model_spec& model, const profile_table& profile,
                           const plan& original, drift_band band, size_t window,
                           policy_options policy)
    : model_(&model), profile_(&profile), original_(original), policy_(std::move(policy)),
      monitor_(c, profile, original, band, window) {}

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
  if (!monitor_.changed())
    return std::nullopt;
  monitor_.acknowledge();
  if (!decide)
    return std::nullopt;
  return choose_adaptation(monitor_.estimated_cluster(), *model_, *profile_, latest, original_,
                           monitor_.affected_devices(), policy_);
}

} // namespace deepcee::runtime
