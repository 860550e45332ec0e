#pragma once

#include "actors/job/coordinator.hpp"

#include <string>

/// A node of the job is lost: killed, partitioned away, silent past the liveness bound, or
/// killed by the script in emulated time. The job goes on without it when the surviving
/// stages hold every layer (runtime/adapt/node_loss.hpp): the planner's plan for the
/// surviving devices, same model and global batch, takes the layers from the survivors
/// peer to peer as any re-plan does (coordinator_replan.hpp). A step in flight is dropped
/// and runs again on the new plan with the same samples, so only time is lost.
namespace deepcee::actors {

struct recovery_plan {
  enum class kind {
    ignore,    ///< not a node of the job, or lost already
    no_change, ///< nothing changes: the plan in force does not use it, or keeps a spare out
    go_on,     ///< `order` runs the survivors' plan
    stop,      ///< the job cannot go on: `line` says why
  };
  kind what = kind::ignore;
  replan_order order;
  std::string line; ///< what the log says
};

/// Marks node `node` (by name) lost in `st` and plans what follows. `why` says how it was
/// lost ("disconnected", "silent for 3.0 s", "killed at 12.5 s by the script").
recovery_plan plan_recovery(coordinator_state& st, const std::string& node, const std::string& why);

/// Node `node` (by index) joined the running job as a spare, with its replanner and host
/// boot: it is no longer lost. The planner's plan for every node not lost is ordered
/// (`go_on`) where the adapter's policy would take it (runtime::worth_changing: a step
/// min_gain shorter, the move repaid within payback_steps), as for any re-plan; else the plan in
/// force stays (`no_change`). `line` says which and why.
recovery_plan plan_for_spare(coordinator_state& st, int node, caf::strong_actor_ptr replanner,
                             std::string boot_id);

} // namespace deepcee::actors
