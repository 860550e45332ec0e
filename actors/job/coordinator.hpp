#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"

#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

/// Drives the steps of a job. A step: step_start to every stage (with the micro-batch
/// counts), one stage_report from each once its gradients are reduced, then the global
/// norm, the learning rate and the virtual end of the step (all-reduce times and the
/// reports' way from the emulated cluster), then optimize_order to every stage, answered
/// by nothing: the step's result is the reply at once, and the next step's start follows
/// the order (each stage's devices step first). In wall mode the step starts and ends when
/// it really does (real seconds since the job's epoch); with shaped links the starts and
/// reports wait the latency of the emulated link between the coordinator's node and the
/// stage's (control messages, runtime/sim/simulator.hpp).
struct coordinator_state {
  static inline const char* name = "coordinator";
  std::shared_ptr<job_context> job;
  std::vector<stage_actor> stages; ///< flat order
  /// A multi-process job's actors on other nodes (stages, devices apart from their stage)
  /// whose loss fails the job, each with its node's name.
  std::vector<std::pair<caf::strong_actor_ptr, std::string>> watched;
  std::string lost;   ///< set once a watched actor's node went away
  std::string failed; ///< set once a step failed: no later step runs (no recovery yet)
  std::chrono::milliseconds step_timeout{0}; ///< 0: none
  double clock_s = 0;                        ///< when the next step starts (virtual)
  double probe_hold_s = 0; ///< the adapter's probes at the next boundary hold its ops so long
  /// The allocation in force (the adapter's rebalances) and its emulated cluster, whose
  /// all-reduce and optimizer times end a step; allocations ordered for later steps.
  runtime::plan plan;
  std::shared_ptr<runtime::virtual_cluster> cluster;
  std::map<int64_t, rebalance> ordered;
  std::map<int64_t, replan_order> replans; ///< re-plans ordered, by the step they start at
  /// The pipes of the plan a re-plan put in force (linked to the coordinator; the job's
  /// first pipes are its wiring's).
  std::vector<caf::strong_actor_ptr> replanned_pipes;
  std::vector<caf::strong_actor_ptr> devices_apart; ///< by slot: stage_wiring's `devices`
  std::vector<caf::strong_actor_ptr> replanners;    ///< by node: stage_wiring's `replanners`
  std::vector<std::string> boot_ids;                ///< by node: stage_wiring's `boot_ids`
  int64_t next_step = 1;                            ///< the first step that has not started
  /// The script in force (the job's time events, with its step events and the injected
  /// events merged in as their steps started), the job's step events of steps that have not
  /// started, and injected events still waiting for their step with who asked.
  runtime::link_timeline script;
  runtime::link_timeline scripted;
  struct injection {
    runtime::link_timeline events;
    caf::typed_response_promise<int64_t> answer;
  };
  std::vector<injection> injections;
  adapter_actor adapter; ///< reads every step's result (its monitor: the op times)

  std::optional<caf::typed_response_promise<step_result>> pending;
  step_result result;
  std::vector<std::optional<stage_report>> reports; ///< flat order
  int64_t dropped = 0;                              ///< reports naming no stage of the job
};

/// Injected events (a `script_update`) wait for the next step boundary: before that step's
/// step_start, the due ones (runtime::take_injected) join the script in force, which every
/// stage gets (and its pipes from it) and acknowledges; then the injector is answered with
/// the step, and the step's result carries the events (step_result::injected). Step events
/// of a later step wait for theirs; the answer comes once the last of them is in force.
/// The job's own step events (job_context::script) take the same way at the same boundary,
/// before the injected ones: a step event happens when the run starts its step (after a
/// re-plan's moves), on the job's clock in every time mode, and the stages resolve nothing.
/// A `rebalance` orders an allocation from its effective step on (the first step that has
/// not started, when that one has): the answer is the step it takes effect at. Before that
/// step's step_start every stage gets the rebalance and acknowledges it.
/// `(wire, adapter)` names the adapter, which then reads every step's result before the
/// step's answer goes out (so its decisions of a step are in force from the next one).
/// With `stage_nodes` (a multi-process job) the coordinator monitors every stage, and every
/// device actor in `devices_apart` (by slot: the stage_wiring's `devices`): one that goes
/// away (its node disconnected or died) fails the running step and every later one with a
/// message naming that node, instead of leaving the step waiting.
/// `replanners` (a multi-process job: stage_wiring's, by node) spawn each node's part of a
/// re-plan.
/// With a `step_timeout`, a step that outlives it fails naming the stages (and nodes) it
/// still waits for: a hung peer is an error, not a hang.
/// Sets `coordinator`'s virtual clock to a resumed checkpoint's `clock_s` (waiting at most
/// `timeout` for its answer); throws std::runtime_error when it refuses.
void restore_clock(caf::actor_system& sys, const coordinator_actor& coordinator, double clock_s,
                   std::chrono::milliseconds timeout);

coordinator_actor spawn_coordinator(caf::actor_system& sys, std::shared_ptr<job_context> job,
                                    std::vector<stage_actor> stages,
                                    std::vector<std::string> stage_nodes = {},
                                    std::chrono::milliseconds step_timeout = {},
                                    const std::vector<caf::strong_actor_ptr>& devices_apart = {},
                                    const std::vector<caf::strong_actor_ptr>& replanners = {},
                                    const std::vector<std::string>& boot_ids = {});

} // namespace deepcee::actors
