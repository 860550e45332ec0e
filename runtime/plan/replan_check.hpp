#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/plan/node_layout.hpp"
#include "runtime/plan/plan.hpp"

#include <vector>

/// Whether a running job can switch to another plan at a step boundary (a re-plan that moves
/// layers): the rule the coordinator checks before it orders one.
namespace deepcee::runtime {

/// Throws when a job that runs `running` on `c` cannot run `next`. It throws
/// std::invalid_argument when `next` has another model or global batch, or gives work to a
/// node that cannot take it, and input_error (validate_plan) when it does not fit the
/// cluster. `layout` is where `running` runs; empty, it is one process, which can spawn any
/// plan. A node `n` can take work when `can_spawn[n]` holds: it joined the job, at its start
/// or as a spare, and has a replanner.
void check_replan(const plan& running, const node_layout& layout, const cluster& c,
                  const plan& next, const std::vector<bool>& can_spawn);

} // namespace deepcee::runtime
