#pragma once

#include "actors/job/coordinator.hpp"
#include "actors/protocol/errors.hpp"

#include <functional>
#include <memory>
#include <string>

/// A re-plan at a step boundary of a running job, as the coordinator runs it. Every stage of
/// the old plan has finished its step and stepped its optimizer.
///   1. The new plan's job context, and its stages spawned and wired as the job's start does
///      (job_wiring.hpp). In one process they are linked to the coordinator, so that they end
///      with it; across node processes each node's replanner spawns its part from the new
///      plan's deployment (node_replanner.hpp).
///   2. Each new stage takes the weights and AdamW moments of its layers from an old stage
///      that holds them, peer to peer (stage `move`). The holder is the one
///      runtime::layer_sources names: the same rule as the policy's move time
///      (runtime::plan_state_moves). Where the links are real (wall time across node
///      processes), it is chosen and priced on the network the adapter priced the move on
///      (replan_order::moves_on); elsewhere on the script in force.
///   3. The old stages, their devices apart and the pipes of a previous re-plan stop. The
///      coordinator runs the new plan, its virtual clock advanced by the move's predicted
///      seconds (what moves is the bytes over the cluster's links; dry time moves nothing but
///      keeps the time), and the adapter follows the new job.
namespace deepcee::actors {

/// "2 pipeline(s): [0-1 | 1-3 | 3-4], [0-2 | 2-4]": each stage's layers, as the logs say.
std::string stages_of(const runtime::plan& p);

/// Throws when the running job cannot run `next` (runtime::check_replan). That is another
/// model or global batch, or devices the cluster lacks. In a job of several node processes
/// it is also a node that has no replanner, or one that ran nothing of the job: it is not
/// connected to the others.
void check_replan(const job_context& job, const runtime::plan& next,
                  const std::vector<caf::strong_actor_ptr>& replanners);

/// The job of this process running `next`: a copy of `job`, so that no setting is lost.
/// Only what the plan decides changes: the plan, its emulated cluster (under `script`, the
/// one in force, with the injected events merged in) and, across node processes, where each
/// part runs. The copy has its own statistics and link FIFOs (job_context::counts).
std::shared_ptr<job_context> replanned_context(const job_context& job, const runtime::plan& next,
                                               const runtime::link_timeline& script);

/// Puts `order` in force for step `order.effective_step` (steps 1-3 above), then calls
/// `then`; a failure calls `failed` with its code and reason instead.
void replan_then(coordinator_self self, replan_order order, std::function<void()> then,
                 std::function<void(messages::error_code, std::string)> failed);

} // namespace deepcee::actors
