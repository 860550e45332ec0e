#pragma once

#include "actors/job/coordinator.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

/// Peer snapshots as the coordinator runs them (runtime/adapt/snapshot_plan.hpp). For a plan
/// that holds some layer on one node only, the stages of pipeline 0 snapshot every K steps:
/// the coordinator's `keep` order follows a step's optimizer orders, the stages copy their
/// state in the background (actors/stage/stage_snapshots.hpp), and each keeper's `kept`
/// marks a copy in the ledger. A node lost with a layer held nowhere else rolls the job
/// back to the newest complete snapshot: the survivors' plan takes every layer from the
/// copies of that step, and the steps since run again with the same samples.
namespace deepcee::actors {

/// Puts the snapshots of the plan in force in place (at the start and after a re-plan):
/// which stages, their keepers, every how many steps, and an empty ledger. Logs it.
void plan_job_snapshots(coordinator_state& st);

/// After step `step`'s optimizer orders: the keep orders, when a snapshot is due then.
void order_snapshots(coordinator_self self, int64_t step);

/// A keeper kept the copy of stage (pipeline, stage) after step `step`.
void on_kept(coordinator_self self, int64_t step, int32_t pipeline, int32_t stage);

/// Whether a loss that emptied `lost_stages` can roll back: the newest complete snapshot's
/// step when every layer has a copy of it left; else none, and `why` says why not.
struct rollback_check {
  std::optional<int64_t> step;
  std::string why;
};
rollback_check can_roll_back(const coordinator_state& st, const std::vector<int>& lost_stages);

/// The layer sources of a rollback's re-plan to `next`: per new flat stage, per layer, the
/// old flat stage that keeps its copy (as layer_holders::kept reads it), and the holders
/// that time its move.
struct rollback_moves {
  std::vector<std::vector<int>> sources;
  runtime::plan holders;
};
rollback_moves rollback_sources_for(const coordinator_state& st, const runtime::plan& next);

/// Step `step` was in flight when the loss came (or is the next one) and the survivors'
/// plan now holds the state of the snapshot of step `snapshot`: steps snapshot + 1 to
/// step - 1 run again first, each as the coordinator's own request, then `step`, whose
/// result answers who asked for it, with the replayed losses and the rollback's span since
/// `since_s`.
void replay_from_snapshot(coordinator_self self, int64_t step, int64_t snapshot, double since_s);

} // namespace deepcee::actors
