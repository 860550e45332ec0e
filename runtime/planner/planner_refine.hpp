#pragma once

#include "runtime/planner/partition.hpp"
#include "runtime/planner/planner.hpp"

#include <vector>

/// The moves of the planner's last improvement: plans next to the best one found, each
/// scored by the simulator and kept where it is faster and fits (plan_training's refine).
namespace deepcee::runtime {

/// The moves the last improvement tries, likeliest first: the bounds under the plan's own
/// schedule, the micro-batch size halved or doubled, micro-batches between pipelines, each
/// hop's encoding and each stage's recomputation, a sample between the devices of each stage,
/// each stage split into one per device, neighbouring stages' devices swapped, single
/// micro-batches between pipelines, then each other schedule alone, with each bound moved, the
/// micro-batch size halved or doubled, or a stage split (a move may pay only under another
/// schedule). Every move keeps the global batch, the layers and the devices of `p`.
std::vector<plan> refine_moves(const cost_cache& costs, const plan& p,
                               const planner_options& options);

} // namespace deepcee::runtime
