#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

/// The one wiring of a job, so that `deepcee run` (every actor in one process) and `deepcee
/// node` (each node spawns its part) cannot drift apart. The coordinator's node wires every
/// stage, wherever it runs.
///   1. spawn_local_part spawns this process's stages, and across nodes its devices apart.
///   2. The stages of every node are gathered in flat order into a stage_wiring. In one
///      process that is at once; across nodes the node registry gathers them.
///   3. wire_job spawns the adapter, the coordinator and the pipes beside the coordinator,
///      and sends every stage its peers.
namespace deepcee::actors {

/// Ends the actors it holds when it goes, however the process leaves, so that the actor
/// system's destructor (which waits for every actor) cannot hang.
class actor_guard {
public:
  explicit actor_guard(caf::actor_system& sys) : sys_(sys) {}
  ~actor_guard();
  actor_guard(const actor_guard&) = delete;
  actor_guard& operator=(const actor_guard&) = delete;

  template <class Handle>
  void add(const Handle& h) {
    actors_.push_back(caf::actor_cast<caf::strong_actor_ptr>(h));
  }

private:
  caf::actor_system& sys_;
  std::vector<caf::strong_actor_ptr> actors_;
};

/// What the calling process runs of a job: node `node`'s stages (`stages`, flat order) and
/// its devices apart from their stages (`devices`, slot order; none in dry mode).
struct local_part {
  int node = 0;
  std::vector<stage_actor> stages;
  std::vector<device_actor> devices;
  /// Across node processes: the node's replanner (node_replanner.hpp), which spawns its part
  /// of a re-plan.
  node_replanner_actor replanner{};
  std::string boot_id; ///< the job's job_context::boot_id: this host's boot
};

/// Spawns node `node`'s part of `job`: every stage when the job is not laid out on nodes
/// (one process), each actor held by `guard` as soon as it exists.
local_part spawn_local_part(caf::actor_system& sys, const std::shared_ptr<job_context>& job,
                            int node, actor_guard& guard);
/// The same, each actor handed to `keep` as soon as it exists (a re-plan's coordinator links
/// them to itself).
local_part spawn_local_part(caf::actor_system& sys, const std::shared_ptr<job_context>& job,
                            int node, const std::function<void(caf::strong_actor_ptr)>& keep);

/// The wiring of a job that runs in one process: every stage of `part`, which is all of them.
stage_wiring wiring_of(const local_part& part);

/// A job's actors as the process of its coordinator drives them.
struct wired_job {
  std::shared_ptr<job_context> job;
  std::vector<stage_actor> stages; ///< every stage of the job, flat order, wherever it runs
  coordinator_actor coordinator;
  adapter_actor adapter;
  std::vector<caf::strong_actor_ptr> pipes; ///< one per shared link (none in wall time)
};

/// `wiring` (its stages and devices apart) completed with the coordinator, the adapter and the
/// pipes: what every stage of the job gets.
stage_wiring complete_wiring(stage_wiring wiring, const coordinator_actor& coordinator,
                             const adapter_actor& adapter,
                             std::vector<caf::strong_actor_ptr> pipes);

/// Spawns the adapter, the coordinator and the pipes here, each held by `guard`, completes
/// `wiring` (every stage in flat order; across nodes, the devices apart by slot) with them
/// and sends it to every stage. The coordinator watches the stages of other nodes
/// (job_context::stage_nodes) and the devices apart, and fails a step that outlives
/// `step_timeout`, naming what it waits for.
wired_job wire_job(caf::actor_system& sys, std::shared_ptr<job_context> job, stage_wiring wiring,
                   std::chrono::milliseconds step_timeout, actor_guard& guard);

/// The job a wired job's coordinator runs now and its stages in flat order: after a re-plan,
/// the new plan's (the wiring's own when the coordinator does not answer within `wait`).
/// Read between steps, for checkpoints and traces.
struct running_job {
  std::shared_ptr<job_context> job;
  std::vector<stage_actor> stages;
  runtime::plan plan; ///< that ran the last step: job->plan with any rebalance since
};
running_job job_now(caf::actor_system& sys, const wired_job& wired, std::chrono::milliseconds wait);

/// Runs step `step` of a wired job: its result, or the coordinator's error when it fails or
/// does not answer within `wait`.
caf::expected<step_result> request_step(caf::actor_system& sys,
                                        const coordinator_actor& coordinator, int64_t step,
                                        std::chrono::milliseconds wait);

/// Asks the adapter to run `next` from step `at_step` on (adapter_actor's adapt_to): a plan
/// of the job's layout as a rebalance, any other (same model and global batch) as a re-plan
/// that moves layers. The answer: the step it takes effect at, or the job's refusal.
caf::expected<int64_t> adapt_to(caf::actor_system& sys, const adapter_actor& adapter,
                                const runtime::plan& next, int64_t at_step,
                                std::chrono::milliseconds wait);

/// The adapter's recent decisions, oldest first (empty when it does not answer in `wait`).
std::vector<adapt_record> adapter_decisions(caf::actor_system& sys, const adapter_actor& adapter,
                                            std::chrono::milliseconds wait);

} // namespace deepcee::actors
