#pragma once

#include "actors/job/job_wiring.hpp"
#include "actors/protocol/interfaces.hpp"
#include "runtime/plan/node_layout.hpp"

#include <caf/node_id.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::actors {

/// Reads the events `deepcee inject` sends: a script's text, read from `source`, or
/// `--event` lines (one event each) when `source` is "--event". Throws input_error
/// "FILE:LINE: what" against the job's cluster.
using script_parser =
    std::function<runtime::link_timeline(const std::string& source, const std::string& text)>;

/// Who must join and what has: `expected` holds the flat stage indices each remote node
/// owns and `expected_devices` the slots of its devices apart from their stages
/// (node_layout), so a join that claims others is refused.
struct node_registry_state {
  static inline const char* name = "node_registry";
  job_deployment deployment; ///< what every node runs (`node` and `clock_s` set per reply)
  /// When the registry started, the coordinator's clock reading deployment.clock_s.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::string cluster; ///< the coordinator's cluster fingerprint
  std::vector<std::string> node_names;
  std::vector<std::vector<int32_t>> expected;         ///< per node: its flat stages (empty: local)
  std::vector<std::vector<int32_t>> expected_devices; ///< per node: its slots apart
  std::vector<bool> joined;
  /// Per node: the process (CAF node) that asked for its deployment. A join or error
  /// report for it from another remote process is refused without failing the job, so an
  /// outsider cannot poison the registry for the node that follows.
  std::vector<caf::node_id> asked_from;
  stage_wiring wiring; ///< flat; local stages filled at spawn
  std::optional<caf::typed_response_promise<stage_wiring>> waiting;
  std::string failure; ///< set once the timeout passed or a node was refused
  messages::error_code failure_code = messages::error_code::bad_input; ///< with `failure`
  heartbeat_actor beats;         ///< learns each joined node's heartbeat actor (may be empty)
  script_parser parse;           ///< empty: the job takes no injected events
  coordinator_actor coordinator; ///< where injected events go, once the job is wired
  bool running = false;          ///< the wiring went out: a node that asks now joins as a spare
};

/// `layout` says which node runs each stage and device; `local`'s are there at once. The
/// other nodes that run some ask for `deployment` and join within `timeout`. Once the job
/// runs, a node of the cluster that the plan in force leaves out (one never started, or one
/// lost and started again: its old state is never used) may still ask and join, with no
/// stages, as a spare: the coordinator learns its replanner and may re-plan onto it; a node whose
/// cluster fingerprint differs from `cluster` fails the job. `beats`, when given, is told
/// each joined node's heartbeat actor. `parse` reads injected events (empty: the job takes
/// none); they go to the coordinator that `(wire, coordinator)` from this process names.
node_registry_actor spawn_node_registry(caf::actor_system& sys, job_deployment deployment,
                                        std::string cluster, std::vector<std::string> node_names,
                                        const runtime::node_layout& layout, const local_part& local,
                                        std::chrono::milliseconds timeout,
                                        heartbeat_actor beats = {}, script_parser parse = {});

/// The registry's exit reason after `(stop, interrupt, why)`: the coordinator's node was
/// interrupted (Ctrl-C) and saved what it could; the other nodes tell it from a failure.
caf::error job_interrupted(std::string why);
bool is_job_interrupted(const caf::error& reason);

} // namespace deepcee::actors
