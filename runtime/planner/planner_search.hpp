#pragma once

#include "runtime/cluster/grouping.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/plan_estimate.hpp"
#include "runtime/planner/planner.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

/// The closed-form half of the planner: enumerate plan shapes level by level and rank
/// them with estimate_plan, so the simulator only sees the few that may win.
namespace deepcee::runtime {

/// A shape is priced only when its lower bound (plan_bound::limit_s(): its pipelines'
/// makespan_bound with the all-reduce and optimizer on top, or micro-batches times its slowest
/// transfer) is within this factor of the best step time estimated so far. A bound above
/// the best estimate already ranks the shape below it, but the simulator has the last word
/// on the shortlist and on the plans that name a left-out group's rate, and it may disagree
/// with the estimate; a margin of half as long again keeps those that might still win there
/// and spares the estimate of the many that cannot.
inline constexpr double search_prune_factor = 1.5;

struct search_candidate {
  plan p;
  plan_estimate est;
  std::vector<int> net_groups; ///< network groups it uses
};

struct search_outcome {
  std::vector<search_candidate> ranked; ///< best estimate first, at most `keep`
  int estimated = 0;
  /// Per network group: the best estimated samples/s of any plan that used it (0: none).
  std::vector<double> best_rate_with_group;
  /// Per network group: the best-estimated plan that used it and fits memory, so the
  /// planner can simulate it before saying why the group was left out.
  std::vector<std::optional<search_candidate>> best_with_group;
  /// Of the plans priced that do not fit memory, the smallest overflow (by the estimate).
  memory_shortfall closest;
  /// Devices that cannot hold any layer with one sample, with the reason.
  std::vector<excluded_device> too_small;
};

/// Levels: (1) which devices take part: prefixes of the network groups by speed, each
/// group alone, and the same sets without their slowest compute groups or (for a single
/// group) its slowest nodes; the groups of the network dendrogram's two finer cuts, alone and
/// with the other network groups (a faster link that moves the cut keeps the plans of the
/// groups before it); (2) chain orders of the groups that follow the network's
/// paths (from the fastest group, and from each of the next three by speed, always on to the
/// nearest by link cost in the slower direction, so cross-region hops are few and good); (3) P
/// pipelines, each network group's devices cut into P slices of equal speed (whole nodes where
/// possible), or into P slices that each take a share of every node (one stage per node); (4)
/// stages inside a slice (the whole slice, its nodes, its compute groups or its devices), never
/// spanning two network groups, in one cluster-wide order of nodes and compute groups, so every
/// pipeline's stage k sits on the same nodes; (5) micro-batch size (every divisor of the batch,
/// skipped only when a bound for every plan of that size already loses); (6) schedule (greedy where
/// no fixed one fits memory) and compression of cross-region hops and of hops between nodes; (7)
/// activation recomputation on the stages whose memory binds, kept where the plan then fits or runs
/// faster (planner_options::recompute). Layers are balanced per pipeline by the dynamic program of
/// partition.hpp under memory; samples and micro-batches are proportional to speed. A shape whose
/// lower bound (plan_bound::limit_s()) already exceeds search_prune_factor times the best estimate
/// so far is not priced (planner_options::prune).
///
/// Past `stop_at` no further layout is priced once some plan that fits memory was (the
/// shapes tried first are the likeliest to win; planner_options::time_limit_s).
search_outcome search_candidates(
    const cost_cache& costs, const grouping& groups, int global_batch,
    const planner_options& options, size_t keep,
    std::chrono::steady_clock::time_point stop_at = std::chrono::steady_clock::time_point::max());

} // namespace deepcee::runtime
