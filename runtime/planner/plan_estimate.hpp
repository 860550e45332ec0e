#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/planner/partition.hpp"

#include <algorithm>
#include <optional>

namespace deepcee::runtime {

/// Which network an estimate assumes.
enum class link_model {
  real,    ///< the cluster's links (the planner's pre-ranking)
  uniform, ///< every pair of nodes joined by the same-region default (Metis's assumption)
};

/// Where a plan overflows memory most: the device whose need exceeds its usable memory by
/// the largest factor. device = -1 when every device fits.
struct memory_shortfall {
  int device = -1;
  double need = 0;   ///< its peak: state and the activations its schedule keeps
  double usable = 0; ///< the memory the plan may use on it

  /// Whether this overflow is smaller than `o`'s (any overflow is smaller than none known).
  bool closer_than(const memory_shortfall& o) const {
    return device >= 0 && (o.device < 0 || need / usable < o.need / o.usable);
  }
};

/// A closed-form step time, cheap enough to rank thousands of candidates before the
/// simulator scores the few best. Pipelines are timed with time_schedule over per-stage
/// costs (slowest device of the stage, transfers over the slowest link between stages);
/// gradients are all-reduced per set of holders (min of a flat ring and a ring of node
/// leaders after an intra-node reduce); the optimizer reads and writes the state once.
struct plan_estimate {
  double step_s = 0;
  double pipeline_s = 0;  ///< slowest pipeline's makespan
  double allreduce_s = 0; ///< slowest holder set's all-reduce
  double optimizer_s = 0;
  double samples_per_s = 0;
  bool fits = true;           ///< every device within its memory (same rule as the partition)
  memory_shortfall shortfall; ///< where it overflows most, when it does not fit
};

link_params effective_link(const cluster& c, int a, int b, link_model model);

/// Per-stage F/B/W/communication costs of one pipeline of `p` (what time_schedule takes).
std::vector<stage_cost> pipeline_costs(const cost_cache& costs, const plan& p, int pipeline,
                                       link_model model);

/// Ring all-reduce of `bytes` over `devices` (sorted by id), flat or hierarchical by node.
double allreduce_time(const cluster& c, const std::vector<int>& devices, double bytes,
                      link_model model);

/// A lower bound on the plan's step time under any schedule: each stage runs its F, B and
/// W of every micro-batch one after the other, so the busiest stage's total op time
/// (micro-batches times its slowest member's F + B + W, the simulator's op times) passes
/// before the step ends.
double compute_bound_s(const cost_cache& costs, const plan& p);

plan_estimate estimate_plan(const cost_cache& costs, const plan& p, link_model model,
                            double memory_fraction = device::usable_memory_fraction);

/// What estimate_plan's step time is at least, from the stage costs alone (no schedule is
/// built or timed): the search skips a plan whose bound already loses.
struct plan_bound {
  /// At most the estimate's pipeline_s: each pipeline's makespan_bound (no schedule of its
  /// stage costs finishes sooner), or the WAN queue, which the estimate takes as it is.
  double pipeline_s = 0;
  double allreduce_s = 0; ///< the estimate's own
  double optimizer_s = 0; ///< the estimate's own
  /// Each pipeline's micro-batches times its slowest transfer: a link carries them one
  /// after the other in the simulator (and in reality), though the estimate overlaps them.
  /// A bound on the simulated step, not on the estimate.
  double transfer_s = 0;

  /// At most the estimate's step_s (the same sum, of a part no larger).
  double step_s() const { return pipeline_s + allreduce_s + optimizer_s; }
  /// The larger of the two bounds, what the search compares with its best plan.
  double limit_s() const { return std::max(step_s(), transfer_s); }
};

plan_bound bound_plan(const cost_cache& costs, const plan& p, link_model model);

/// estimate_plan, unless bound_plan's limit_s() already exceeds `limit_s`: then none. The
/// stage costs are computed once for both.
std::optional<plan_estimate> estimate_plan_within(const cost_cache& costs, const plan& p,
                                                  link_model model, double memory_fraction,
                                                  double limit_s);

} // namespace deepcee::runtime
