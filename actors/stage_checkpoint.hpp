#pragma once

#include "actors/checkpoint_messages.hpp"
#include "actors/stage_actor.hpp"

namespace deepcee::actors {

/// The stage's layers as they are after its last optimizer step. Throws std::logic_error
/// while a step runs (a checkpoint is taken between steps only).
stage_snapshot take_snapshot(const stage_state& st);

/// Loads a snapshot's layers into every device of the stage before the next step. A tensor
/// that is missing, of another shape or not of this stage's layers throws input_error
/// naming `snapshot.source`, and nothing is changed then.
void restore_snapshot(stage_state& st, const stage_snapshot& snapshot);

} // namespace deepcee::actors
