#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/drift_tracker.hpp"
#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/adapt/link_statistics.hpp"
#include "runtime/adapt/step_adapter.hpp"
#include "runtime/adapt/wall_transfers.hpp"
#include "runtime/base/step_ordered.hpp"
#include "runtime/schedule/op_readiness.hpp"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace deepcee::actors {

struct adapter_options {
  /// Whether the policy runs when the monitor reports drift (the estimates are kept
  /// either way). It runs where the job's transfer and op times are the emulated
  /// cluster's (virtual and dry time, and shaped wall time for the links): in plain wall
  /// time the measured in-process transfers are not the cluster's links.
  bool react = true;
  runtime::drift_band band;
  /// Real links (wall time across node processes): a drift takes 8 messages in a row, so
  /// that one step the host slowed (a burst of compute beside the transfers) is not one.
  runtime::drift_band real_link_band{.min_samples = 8};
  /// Wall time's devices: real op times carry the host's load (other processes, the
  /// network's interrupts), so a device drifts at 2x over 4 steps in a row.
  runtime::drift_band wall_device_band{
      .enter_low = 0.5, .enter_high = 2.0, .clear_low = 0.67, .clear_high = 1.5, .min_samples = 4};
  size_t window = 9; ///< the monitor's median window
  /// Re-plans move layers between stages (coordinator_replan.hpp); a job that cannot (one
  /// laid out on several node processes) turns them off, and the policy then chooses among
  /// rebalance, resplit, compression and restore.
  runtime::policy_options policy;
  runtime::probe_options probes;
  size_t max_decisions = 64; ///< the most recent ones kept for `decisions`
  /// By node: how far its clock may lie from the coordinator's node's (job_context's
  /// clock_error_s), which bounds what real transfers between nodes can measure.
  std::vector<double> clock_error_s;
  /// By node: its replanner (stage_wiring's `replanners`), which sends and receives the
  /// active probes between node processes in wall time.
  std::vector<caf::strong_actor_ptr> replanners;
};

/// The dynamic environment adapter. It reacts at step boundaries, where a new allocation or
/// plan can take effect. Its rule is runtime::step_adapter, which simulate_adaptive runs too.
/// Every link sample feeds its per-link statistics (the run's trace) and its monitor. Every
/// step's result feeds the monitor the stages' compute times. When a link or device entered
/// or left drift during the step, the policy (runtime::choose_adaptation) decides on the
/// estimated cluster. A decision other than keep is ordered from the coordinator for the
/// next step: a rebalance, or a re-plan when it moves layers. Each decision is logged
/// (spdlog info) and kept, the latest `max_decisions` of them.
/// While a drifted link or device is out of the plan, the rule's active probes
/// (runtime/adapt/active_probe.hpp) run at the boundaries it names. In virtual and dry time
/// they run on the job's link model and script in force, and the step's answer to the
/// coordinator is how long they hold the next step's start. In wall time across node
/// processes a link probe is real (probe_links): the two nodes' replanners send and time it
/// over the job's connections while the next step runs, and its messages reach the monitor
/// through runtime::wall_transfers, as the plan's do. It holds nothing. Device probes are
/// not sent in wall time.
/// In wall time without shaping, across node processes, the links are real: the receivers
/// report each message between processes, and runtime::wall_transfers makes them the
/// monitor's samples.
struct adapter_state {
  static inline const char* name = "adapter";
  std::shared_ptr<job_context> job; ///< none: statistics only; a re-plan's once in force
  adapter_options options;
  std::optional<runtime::step_adapter> adapter;
  std::optional<runtime::wall_transfers> real; ///< wall time without shaping: real links
  runtime::plan latest;   ///< the plan ordered last (the policy's current plan)
  runtime::plan in_force; ///< the plan of the last step that ran (the monitor's)
  runtime::step_ordered<runtime::plan> ordered; ///< by the step each takes effect at
  coordinator_actor coordinator;
  int64_t last_step = 0; ///< the latest step a sample or result came from
  std::string probed; ///< what the last probe round probed (a round that repeats it logs at debug)
  /// Node pairs whose real probes have not answered yet: no second round goes there meanwhile.
  std::set<std::pair<int, int>> probing;
  std::deque<adapt_record> decisions;
  /// What had drifted at the last decision ("link 2->4", "device 3"): what a later one names
  /// as back.
  std::vector<std::string> drifted_names;
  int64_t decided = 0; ///< decisions so far
  /// The job's script in force (step events resolved, injected events merged): the link
  /// model the active probes run on.
  runtime::link_timeline script;

  runtime::link_statistics links;
  std::vector<link_sample> samples;
  size_t max_samples = 1'000'000;
};

/// The decision's record: its kind and reason, its predicted step times and gain.
adapt_record record_of(const runtime::adapt_decision& d, int64_t step);

/// One line for a decision, as the adapter logs it and `deepcee run` prints it.
std::string describe(const adapt_record& r);

/// `job` may be null (an adapter that only keeps link statistics).
adapter_actor spawn_adapter(caf::actor_system& sys, std::shared_ptr<job_context> job = nullptr,
                            adapter_options options = {});

} // namespace deepcee::actors
