#pragma once

#include "actors/protocol/protocol.hpp"
#include "actors/stage/stage_actor.hpp"

namespace deepcee::actors {

/// Throws std::logic_error naming the stage when `what` (a snapshot, a restore) cannot be
/// done now: in dry mode (no weights) or while a step runs (only between steps).
void require_weights_between_steps(const stage_state& st, const char* what);

/// The stage's layers (its group's weights and moments, `params`) after its last step.
stage_snapshot snapshot_of(const stage_state& st, std::vector<kernels::parameter_state> params);

} // namespace deepcee::actors
