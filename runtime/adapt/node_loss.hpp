#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/planner.hpp"

#include <optional>
#include <string>
#include <vector>

/// What a running job keeps when nodes are lost, and the plan it goes on with. Every stage
/// of every pipeline holds its layers' weights and AdamW moments, equal in every pipeline
/// after every step, so a layer survives while one stage that holds it survives.
namespace deepcee::runtime {

/// The running plan as the survivors hold it. `holders` is the plan with every stage that
/// lost a device, or whose actor ran on a lost node, emptied of devices: flat stage indices
/// stay as they were, and plan_state_moves and layer_sources take layers only from the
/// stages left. `lost_stages` are the flat indices of the emptied stages, `lost_layers`
/// the layers no surviving stage holds, ascending.
struct surviving_state {
  plan holders;
  std::vector<int> lost_stages;
  std::vector<int> lost_layers;
};

/// `stage_node` gives each flat stage's node (empty: the node of each stage's first
/// device); `lost_nodes` are indices into `c.nodes`.
surviving_state surviving_holders(const cluster& c, const plan& running,
                                  const std::vector<int>& lost_nodes,
                                  const std::vector<int>& stage_node = {});

/// `c` without the nodes `lost_nodes` and their devices, renumbered, and, for each device of
/// the result, its id in `c`. Link overrides naming a lost node or device are left out.
struct survivor_cluster {
  cluster survivors;
  std::vector<int> original_device;
};
survivor_cluster cluster_without(const cluster& c, const std::vector<int>& lost_nodes);

/// The planner's plan for the surviving devices of `c`, for `running`'s model and global
/// batch, with device ids of `c`; the lost devices are listed as excluded. Throws
/// input_error when the survivors cannot hold the model or split the batch.
plan plan_for_survivors(const cluster& c, const profile_table& profile, const plan& running,
                        const std::vector<int>& lost_nodes, planner_options options);

/// The earliest kill in `script` of a node whose devices `running` uses, leaving out the
/// nodes in `lost`; none when the script kills none of them.
std::optional<node_change> first_kill(const link_timeline& script, const cluster& c,
                                      const plan& running, const std::vector<int>& lost);

/// "layers 3-5 and 8" for a list of ascending layers; "" for none.
std::string layer_ranges(const std::vector<int>& layers);

/// "node e0 lost (disconnected)": how a loss is named, `why` saying how it came.
std::string lost_line(const std::string& node, const std::string& why);

/// "killed at 3.2 s by the script": the `why` of a kill in emulated time.
std::string killed_by_script(double at_s);

/// The one line of a loss the job cannot survive: `lost` (lost_line), the layers no other
/// node held, why no snapshot gave them back (`snapshots`: "" when the job kept none) and
/// what to resume from (`checkpoint`: snapshot_plan.hpp's checkpoint_note; "": its newest
/// checkpoint).
std::string cannot_go_on(const std::string& lost, const std::vector<int>& lost_layers,
                         const std::string& snapshots = {}, const std::string& checkpoint = {});

/// A recovery from a kill in the script, as the coordinator runs it in emulated time: the
/// plan for the survivors, when its first step starts, and how many steps it runs again
/// first. The kill is the first of a node `running` uses (first_kill), added to `lost`. The
/// loss counts from the kill, not before the step began; it is noticed the liveness bound
/// later, and then the layers move: from surviving stages, or where some layer was held on
/// the lost node only, from the newest complete peer snapshot, whose later steps run again.
struct kill_recovery {
  plan next;
  double restart_s = 0;
  int replayed = 0; ///< steps run again on `next` before the step the kill hit
};
/// When a loss at `lost_at_s` is noticed: counted from the kill, not before the step began
/// at `step_start_s`, and `liveness_s` (the heartbeat's timeout) later.
double loss_noticed_s(double lost_at_s, double step_start_s, double liveness_s);

/// Where the kill finds the job.
struct kill_moment {
  double step_start_s = 0;
  double liveness_s = 3;
  int64_t steps_done = 0;  ///< before the step the kill hits
  int snapshot_every = -1; ///< the job file's snapshot_every (-1: auto)
};

/// Throws job_stopped (cannot_go_on's line) when the survivors miss a layer no complete
/// snapshot gives back, and std::logic_error when the script kills no node `running` uses.
kill_recovery recover_from_kill(const cluster& c, const profile_table& profile, const plan& running,
                                const link_timeline& script, std::vector<int>& lost,
                                const kill_moment& at, const planner_options& options = {});

} // namespace deepcee::runtime
