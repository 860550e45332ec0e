#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "runtime/adapt/snapshot_plan.hpp"
#include "runtime/base/step_ordered.hpp"

#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

/// Where the coordinator is in its life. A step goes idle -> starting (-> replanning ->
/// starting) -> running -> ending -> idle. Failed and stopped last for good.
///
/// Which message is valid in which phase. One that is not is refused with an error, or
/// dropped when nobody waits for its answer.
/// `step` is valid when idle. During a step it is refused, since one step runs at a time.
/// Once failed or stopped, the refusal says why the job cannot go on.
/// `restore` (the virtual clock) is valid between steps: idle, failed or stopped.
/// `rebalance`, `replan_order` and `script_update` order something for a later step. They
/// are valid in every phase but failed and stopped, where no later step comes.
/// A stage's report is valid when running, for the step that runs. A report of an error
/// is valid in any phase: it fails the step in flight, or the job between steps.
/// The step timeout counts during the step it was set for.
/// `stop` and the end of a watched actor stop the job in any phase.
/// `plan` and `wire` are valid in any phase.
enum class coordinator_phase {
  idle,       ///< Between steps.
  starting,   ///< At a step's boundary. Its events and allocation go to every stage.
  replanning, ///< At a step's boundary. A re-plan spawns the new stages and moves layers.
  running,    ///< The stages have the step's start. Their reports come in.
  ending,     ///< Every report is in. The adapter reads the result before it goes out.
  recovering, ///< A node was lost during the step: the survivors' plan takes its place,
              ///< then the step starts again with the same samples.
  failed,     ///< A step failed. Its stages may hold half-reduced gradients, so none runs.
  stopped,    ///< A node of the job went away, or the job was stopped.
};

/// Whether a step runs (from its boundary until its answer goes out).
inline bool in_step(coordinator_phase p) {
  return p == coordinator_phase::starting || p == coordinator_phase::replanning ||
         p == coordinator_phase::running || p == coordinator_phase::ending ||
         p == coordinator_phase::recovering;
}

/// Drives the steps of a job. A step begins with step_start to every stage, with the
/// micro-batch counts. Each stage reports once its gradients are reduced. Then the
/// coordinator decides the global norm, the learning rate and the virtual end of the step
/// (the emulated cluster times the all-reduce and the reports' way). Then optimize_order
/// goes to every stage. Nothing answers the order: the step's result is the reply at once.
/// The next step's start follows the order on the same way, so each stage's devices step
/// first. In wall mode the step starts and ends when it really does (real seconds since the
/// job's epoch). With shaped links the starts and reports wait the latency of the emulated
/// link between the coordinator's node and the stage's (control messages,
/// runtime/sim/simulator.hpp).
struct coordinator_state {
  static inline const char* name = "coordinator";
  std::shared_ptr<job_context> job;
  std::vector<stage_actor> stages; ///< flat order
  coordinator_phase phase = coordinator_phase::idle;
  /// Why the job cannot go on, once failed or stopped: the first reason stays.
  std::string ended;
  /// A multi-process job's actors on other nodes (stages, devices apart from their stage),
  /// each with its node's name. Losing one stops the job.
  std::vector<std::pair<caf::strong_actor_ptr, std::string>> watched;
  std::chrono::milliseconds step_timeout{0}; ///< 0: none
  double clock_s = 0;                        ///< when the next step starts (virtual)
  double probe_hold_s = 0; ///< the adapter's probes at the next boundary hold its ops so long
  /// The allocation in force (the adapter's rebalances) and its emulated cluster, whose
  /// all-reduce and optimizer times end a step.
  runtime::plan plan;
  std::shared_ptr<runtime::virtual_cluster> cluster;
  runtime::step_ordered<rebalance> ordered;    ///< allocations ordered for later steps
  runtime::step_ordered<replan_order> replans; ///< re-plans ordered for later steps
  /// The pipes of the plan a re-plan put in force, linked to the coordinator. The job's
  /// first pipes are its wiring's.
  std::vector<caf::strong_actor_ptr> replanned_pipes;
  std::vector<caf::strong_actor_ptr> devices_apart; ///< by slot: stage_wiring's `devices`
  std::vector<caf::strong_actor_ptr> replanners;    ///< by node: stage_wiring's `replanners`
  std::vector<std::string> boot_ids;                ///< by node: stage_wiring's `boot_ids`
  heartbeat_actor
      heartbeat; ///< its node's (stage_wiring's): told as a re-plan's moves start and end
  std::vector<int> lost_nodes; ///< nodes of the cluster the job lost (coordinator_recovery.hpp)
  int64_t next_step = 1;       ///< the first step that has not started
  /// The script in force: the job's time events, with its step events and the injected
  /// events merged in as their steps started.
  runtime::link_timeline script;
  /// The job's step events of steps that have not started.
  runtime::link_timeline scripted;
  /// Injected events still waiting for their step, with who asked.
  struct injection {
    runtime::link_timeline events;
    caf::typed_response_promise<int64_t> answer;
  };
  std::vector<injection> injections;
  adapter_actor adapter; ///< reads every step's result (its monitor: the op times)

  /// The step in flight: who asked for it, its result so far and its stages' reports.
  std::optional<caf::typed_response_promise<step_result>> pending;
  step_result result;
  std::vector<std::optional<stage_report>> reports; ///< flat order
  int64_t dropped = 0;                              ///< reports naming no stage of the job

  /// Peer snapshots of the plan in force (snapshot_keeping.hpp): which stages keep them
  /// where, every how many steps (0: none), and which are complete.
  runtime::snapshot_layout snapshot_layout;
  int snapshot_every = 0;
  runtime::snapshot_ledger snapshots;
  /// A rollback that replays steps: the answer owed to who asked for the step the loss
  /// came in, that step, and what the replay has so far.
  struct rollback_run {
    caf::typed_response_promise<step_result> answer;
    int64_t snapshot = 0;
    int64_t target = 0;
    double since_s = 0;
    std::vector<finish_span> finish; ///< the recovery's spans (the re-plan's move)
    std::vector<double> losses;
  };
  std::optional<rollback_run> rollback;
};

using coordinator_self = coordinator_actor::stateful_pointer<coordinator_state>;

/// Watches the job's actors on other nodes, in place of what it watched before: its stages
/// (`stage_nodes` names each one's node; empty in one process) and its devices apart. An
/// actor of these that goes away stops the job with a message naming its node.
void watch_remote_actors(coordinator_self self, const std::vector<std::string>& stage_nodes);

/// Spawns the coordinator of `job`, whose stages are `stages` (flat order).
///
/// Injected events (a `script_update`) wait for the next step boundary. Before that step's
/// step_start, the due ones (runtime::take_injected) join the script in force, which every
/// stage gets (and its pipes from it) and acknowledges. Then the injector is answered with
/// the step, and the step's result carries the events (step_result::injected). Step events
/// of a later step wait for theirs; the answer comes once the last of them is in force.
/// The job's own step events (job_context::script) take the same way at the same boundary,
/// before the injected ones. A step event happens when the run starts its step (after a
/// re-plan's moves), on the job's clock in every time mode, and the stages resolve nothing.
///
/// A `rebalance` orders an allocation from its effective step on (the first step that has
/// not started, when that one has): the answer is the step it takes effect at. Before that
/// step's step_start every stage gets the rebalance and acknowledges it.
///
/// `(wire, adapter)` names the adapter, which then reads every step's result before the
/// step's answer goes out, so that its decisions of a step are in force from the next one.
///
/// A multi-process job passes `stage_nodes`, and `devices_apart` by slot (the
/// stage_wiring's `devices`). The coordinator watches those actors: one that goes away (its
/// node disconnected or died) fails the running step and every later one with a message
/// naming that node, instead of leaving the step waiting. `replanners` (stage_wiring's, by
/// node) spawn each node's part of a re-plan.
///
/// With a `step_timeout`, a step that outlives it fails naming the stages (and nodes) it
/// still waits for: a hung peer is an error, not a hang.
coordinator_actor spawn_coordinator(caf::actor_system& sys, std::shared_ptr<job_context> job,
                                    std::vector<stage_actor> stages,
                                    std::vector<std::string> stage_nodes = {},
                                    std::chrono::milliseconds step_timeout = {},
                                    const std::vector<caf::strong_actor_ptr>& devices_apart = {},
                                    const std::vector<caf::strong_actor_ptr>& replanners = {},
                                    const std::vector<std::string>& boot_ids = {},
                                    caf::strong_actor_ptr heartbeat = nullptr);

/// Sets `coordinator`'s virtual clock to a resumed checkpoint's `clock_s`, waiting at most
/// `timeout` for its answer. Throws std::runtime_error when it refuses.
void restore_clock(caf::actor_system& sys, const coordinator_actor& coordinator, double clock_s,
                   std::chrono::milliseconds timeout);

} // namespace deepcee::actors
