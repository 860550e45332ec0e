#pragma once

#include "actors/protocol/protocol.hpp"
#include "actors/stage/stage_actor.hpp"
#include "actors/stage/stage_tensors.hpp"

#include <caf/result.hpp>

/// A stage's part in peer snapshots (runtime/adapt/snapshot_plan.hpp).
///
/// The coordinator's `keep` order follows its optimizer order on the same way, so the
/// stage's request to its group follows the optimizer step there, and the next step's ops
/// follow the request: the copy is the state after that step, taken without holding the
/// stage, which goes on to the next step while the copy travels. The stage keeps one copy
/// and sends one to its keeper, a stage on another node, which tells the coordinator. Each
/// stage keeps the two newest copies of every stage it holds copies of, so that the newest
/// complete one stays while the next one comes in.
namespace deepcee::actors {

/// The coordinator's order: snapshot after step `step`, keep a copy, send one to `keeper`.
void take_snapshot(stage_self self, int64_t step, const caf::strong_actor_ptr& keeper);

/// A copy of another stage's snapshot to keep, with the digest of its weights and moments
/// (state_digest) as its sender computed it; the coordinator hears that it is kept. A copy
/// whose digest differs came corrupted: it is refused with one line naming its sender, and
/// the snapshot stays incomplete while the job goes on.
void keep_snapshot(stage_self self, stage_snapshot& snapshot, uint64_t digest);

/// Layer `layer`'s state from a copy kept at step `step` (a rollback's new stage asks);
/// refused when no copy of that step holds it.
caf::result<stage_snapshot> answer_kept_layer(stage_self self, int32_t layer, int64_t step);

} // namespace deepcee::actors
