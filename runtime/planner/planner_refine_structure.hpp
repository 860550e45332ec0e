#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/planner/partition.hpp"

#include <optional>
#include <vector>

/// The last improvement's moves that change a plan's structure or treat one pipeline apart
/// from the others: what a user tuning a plan by hand tries once the plan's shape is right.
/// The estimate that ranked the plan shares samples, layers and micro-batches by closed-form
/// rules; the simulator sees queues, bubbles and memory that those rules miss.
namespace deepcee::runtime {

/// Plans next to `p`, each valid for the same batch and layers, on a subset of its devices:
/// each stage bound moved by two layers in every pipeline alike, and by one in a single
/// pipeline; each stage merged with the next, or cut in two halves (in every pipeline alike,
/// and in a single one); each device of a stage of
/// several moved to a neighbouring stage, or out of the plan; each pipeline dropped (its
/// micro-batches shared by the others); the micro-batch size moved to the next divisor of the batch
/// up or down; each hop's encoding and each stage's recomputation changed in a single pipeline. The
/// single-pipeline moves are made for plans of at most refine_single_pipelines pipelines.
std::vector<plan> structure_moves(const cost_cache& costs, const plan& p);

/// Plans of more pipelines than this get no single-pipeline moves: their pipelines are
/// replicas, which the moves of every pipeline alike already serve.
inline constexpr size_t refine_single_pipelines = 8;

/// `p` with micro-batches of `b` samples: as many micro-batches in all as the batch then
/// needs, shared in proportion to the pipelines' present counts, and each stage's samples
/// again by speed. None where `b` does not divide the batch, a stage has more devices than
/// `b` samples, or a pipeline would get none.
std::optional<plan> micro_batch_resized(const cost_cache& costs, const plan& p, int b);

} // namespace deepcee::runtime
