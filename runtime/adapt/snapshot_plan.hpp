#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/plan/plan.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

/// Peer snapshots: what keeps a layer that lives on one node only. A replica in another
/// pipeline on another node gives a lost layer back exactly (node_loss.hpp); a layer held
/// on one node only has none. For those plans, every stage of pipeline 0 (which holds every
/// layer once) snapshots its weights and AdamW moments every K steps: one copy stays with
/// the stage, one goes to a keeper, a stage on another node. Losing one node then leaves a
/// copy of every layer at the snapshot's step: the stage's own where it survived, its
/// keeper's where not. The whole job rolls back to that step, so every layer is at the same
/// step (a replica of a surviving layer is newer, and is not used), and replays the steps
/// since with the same samples.
namespace deepcee::runtime {

/// Which stages snapshot, and where their copies go.
struct snapshot_layout {
  /// The layers every holder of which runs on one node, ascending. None: replicas suffice.
  std::vector<int> single_node_layers;
  /// The flat stages that snapshot (pipeline 0's), and for each the flat stage on another
  /// node that keeps its copy. Empty when no layer needs one, or when no other node runs a
  /// stage to keep it.
  std::vector<int> stages;
  std::vector<int> keepers;

  bool needed() const { return !stages.empty(); }
};

/// The layout for `p` on `c`. `stage_node` gives each flat stage's node (empty: the node of
/// its first device). A stage's keeper is the next flat stage, in cyclic order, whose node
/// differs from its own.
snapshot_layout plan_snapshots(const cluster& c, const plan& p,
                               const std::vector<int>& stage_node = {});

/// One snapshot's way to the keepers: its stages send in parallel, so it takes as long as
/// the slowest stage's weights and moments over its link to its keeper.
struct snapshot_cost {
  double bytes = 0;   ///< every stage's, together
  double seconds = 0; ///< the slowest stage's send
};
snapshot_cost snapshot_send(const cluster& c, const model_spec& model, const plan& p,
                            const snapshot_layout& l, const link_timeline& script = {},
                            double at_s = 0);

/// Every how many steps a snapshot goes out so that its send costs at most `budget` of the
/// step time: the send spread over the steps until the next one. At least 1.
int snapshot_interval(double send_s, double step_s, double budget = 0.05);

/// Every how many steps a job snapshots: `set` where it is 0 or more (the job file's
/// snapshot_every), else snapshot_interval's at most 5% of `step_s`.
int snapshot_every(int set, const snapshot_cost& cost, double step_s);

/// The newest snapshot complete once a job has run `steps_done` steps, taking one after
/// every `every`-th step: its copies reach their keepers during the step after it, so the
/// newest step's own is not counted. None before the first, or with `every` 0.
std::optional<int64_t> newest_complete_snapshot(int64_t steps_done, int every);

/// Which snapshots are complete. One is complete once every stage of the layout has its
/// copy with its keeper, all of the same step: a consistent cut.
class snapshot_ledger {
public:
  explicit snapshot_ledger(size_t stages = 0) : stages_(stages) {}

  /// The copy of entry `index` (of snapshot_layout::stages) of step `step` is kept.
  void kept(int64_t step, size_t index);
  /// The newest complete snapshot's step; none yet.
  std::optional<int64_t> complete() const { return complete_; }

private:
  size_t stages_ = 0;
  std::map<int64_t, std::vector<bool>> arriving_; ///< incomplete steps newer than complete_
  std::optional<int64_t> complete_;
};

/// Where a rollback takes each layer's state at the snapshot's step from, after the job
/// lost `lost_stages` (flat, node_loss.hpp's surviving_state): the snapshotting stage where
/// it survived (its own copy), else its keeper where that survived. `lost_layers` are those
/// whose stage and keeper were both lost, ascending.
struct rollback_sources {
  std::vector<int> layer_source; ///< per layer: a flat stage of the running plan, or -1
  std::vector<int> lost_layers;
  /// The running plan's pipeline 0 with each stage's devices those its state comes from:
  /// its keeper's for a lost stage. A move from it (plan_state_moves) times the rollback.
  plan holders;
};
rollback_sources snapshot_sources(const plan& running, const snapshot_layout& l,
                                  const std::vector<int>& lost_stages);

/// For each stage of `next` (flat) and each of its layers, the stage of the running plan
/// (flat) that holds its state, from `layer_source`.
std::vector<std::vector<int>> sources_by_stage(const plan& next,
                                               const std::vector<int>& layer_source);

/// The newest checkpoint the job wrote after `steps_done` steps, writing one every
/// `every` steps (0: only at the end); none before the first.
std::optional<int64_t> newest_checkpoint(int64_t steps_done, int every);

/// What the line of a job that cannot go on says of its checkpoint: "resume it from its
/// newest complete checkpoint, step 10's", or that there is none yet.
std::string checkpoint_note(std::optional<int64_t> step);

} // namespace deepcee::runtime
