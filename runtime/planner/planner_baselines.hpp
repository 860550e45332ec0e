#pragma once

#include <functional>

#include "runtime/planner/partition.hpp"
#include "runtime/planner/planner.hpp"

#include <vector>

/// The baselines' half of the planner: each baseline built by baselines.hpp over the whole
/// cluster and over single network groups or regions, and scored by the same simulator as the
/// search.
namespace deepcee::runtime {

/// Whether a plan simulated as `a` ranks before one simulated as `b`: one that fits memory
/// first, then the higher samples/s.
bool ranks_faster(const sim_result& a, const sim_result& b);

/// Simulates plans and counts them, for planner_report::plans_simulated.
struct plan_scorer {
  const cluster& c;
  const model_spec& model;
  const profile_table& profiles;
  int simulated = 0;
  std::function<void(int simulated)> on_simulated = nullptr; ///< after each simulation, if set

  sim_result operator()(const plan& p) {
    ++simulated;
    sim_result r = simulate(c, model, profiles, p);
    if (on_simulated)
      on_simulated(simulated);
    return r;
  }
};

/// The baselines' rows (planner_report::strategies without deepcee's): dp, gpipe, megatron
/// and metis over every device, each followed by its fastest variant restricted to one
/// network group or region when options.restricted_baselines and some group or region
/// smaller than the cluster can hold the model. A baseline that cannot split the batch has
/// a row with its reason and no plan.
std::vector<strategy_result> score_baselines(const cost_cache& costs, const grouping& groups,
                                             int global_batch, const planner_options& options,
                                             plan_scorer& score);

} // namespace deepcee::runtime
