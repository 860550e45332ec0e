#pragma once

#include "actors/protocol/protocol.hpp"
#include "actors/stage/stage_actor.hpp"
#include "actors/stage/stage_tensors.hpp"

#include <caf/result.hpp>

namespace deepcee::actors {

/// Throws std::logic_error naming the stage when `what` (a snapshot, a restore) cannot be
/// done now: in dry mode (no weights) or while a step runs (only between steps).
void require_weights_between_steps(const stage_state& st, const char* what);

/// The stage's layers (its group's weights and moments, `params`) after its last step.
stage_snapshot snapshot_of(const stage_state& st, std::vector<kernels::parameter_state> params);

/// The stage's answer to a snapshot request: its group's weights and moments between steps
/// (refused when too large to cross nodes and the asker is on another node).
caf::result<stage_snapshot> answer_snapshot(stage_self self);

/// Layer `layer`'s weights and moments alone, for a stage of a new plan that takes it over
/// (a re-plan): refused when the stage does not hold that layer.
caf::result<stage_snapshot> answer_layer_snapshot(stage_self self, int32_t layer);

/// A re-plan's new stage takes its layers' weights and moments (after `step` steps) from the
/// old stages, one layer from each of `sources` (in layer order, from its first layer), peer
/// to peer, and loads them into its group; the answer is the bytes it received (none in dry
/// time, which has no weights). With `kept` (a rollback), each layer comes from a snapshot
/// its source kept after `step` (stage_snapshots.hpp).
caf::result<int64_t> take_layers(stage_self self, std::vector<caf::strong_actor_ptr> sources,
                                 int64_t step, bool kept = false);

/// The stage's answer to a restore: its group takes the snapshot's weights and moments.
caf::result<int64_t> answer_restore(stage_self self, const stage_snapshot& snapshot);

} // namespace deepcee::actors
