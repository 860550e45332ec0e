#pragma once

#include "actors/job/coordinator.hpp"
#include "actors/protocol/errors.hpp"

#include <functional>
#include <string>

/// A re-plan at a step boundary of a running job, as the coordinator runs it (every stage of
/// the old plan has finished its step and stepped its optimizer):
///   1. the new plan's job context, and its stages spawned and wired as the job's start does
///      (job_wiring.hpp): here, linked to the coordinator so that they end with it, or across
///      node processes by each node's replanner from the new plan's deployment
///      (node_replanner.hpp);
///   2. each new stage takes the weights and AdamW moments of its layers from an old stage
///      that holds them, peer to peer (stage `move`), from the holder runtime::layer_sources
///      names: the same rule as the policy's move time (runtime::plan_state_moves);
///   3. the old stages, their devices apart and the pipes of a previous re-plan stop; the
///   coordinator runs the new
///      plan, its virtual clock advanced by the move's predicted seconds (what moves is the
///      bytes over the cluster's links; dry time moves nothing but keeps the time), and the
///      adapter follows the new job.
namespace deepcee::actors {

using coordinator_self = coordinator_actor::stateful_pointer<coordinator_state>;

/// Throws std::invalid_argument when the running job cannot run `next`: another model or
/// global batch, devices the cluster lacks, or (a job of several node processes) a node
/// that has no replanner or ran nothing of the job (it is not connected to the others).
void check_replan(const job_context& job, const runtime::plan& next,
                  const std::vector<caf::strong_actor_ptr>& replanners);

/// Puts `order` in force for step `order.effective_step` (steps 1-3 above), then calls
/// `then`; a failure calls `failed` with its code and reason instead.
void replan_then(coordinator_self self, replan_order order, std::function<void()> then,
                 std::function<void(messages::error_code, std::string)> failed);

} // namespace deepcee::actors
