#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "runtime/base/step_ordered.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "runtime/step/link_sharing.hpp"
#include "runtime/step/pipe_order.hpp"

#include <map>
#include <memory>
#include <vector>

namespace deepcee::actors {

/// One shared sharing group (transfers whose network resources overlap) in virtual time.
/// Stages send it their transfer parts in this group (pipe_request) and promises about
/// their later ones (send_horizon); runtime::pipe_order commits a part once no sender can
/// still send one that goes first, the group's FIFO resources (runtime::link_fifo, as on a
/// sender's own groups) time it, and the receiving stage learns the arrival
/// (pipe_arrival). The payload travels straight from stage to stage.
struct pipe_state {
  static inline const char* name = "pipe";
  std::shared_ptr<job_context> job;
  runtime::shared_link link;
  std::unique_ptr<runtime::pipe_order> order;
  runtime::link_fifo fifo;
  std::map<uint64_t, pipe_request> queued; ///< by pipe_order id
  uint64_t next_id = 0;
  std::vector<stage_actor> stages; ///< flat order
  coordinator_actor coordinator;
  adapter_actor adapter;
  /// The emulated cluster of each allocation the adapter ordered, by the step it starts at
  /// (its senders forward the rebalance before their first request of that step): a
  /// request's part is the one of its step's allocation.
  runtime::step_ordered<std::shared_ptr<const runtime::virtual_cluster>> allocations;
  /// What each allocation is built from: the plans the adapter ordered and the scripts of
  /// injected events (script_update), by the step they start at.
  runtime::step_ordered<runtime::plan> plans;
  runtime::step_ordered<runtime::link_timeline> scripts;
};

/// Spawns the pipe of `link`; `stages` in flat order. A malformed request or a broken
/// promise is reported to the coordinator as the sending stage's error.
pipe_actor spawn_pipe(caf::actor_system& sys, std::shared_ptr<job_context> job,
                      runtime::shared_link link, std::vector<stage_actor> stages,
                      coordinator_actor coordinator, adapter_actor adapter);

/// A pipe for every shared link of the job (runtime::shared_links order), as stage_wiring
/// carries them; none in wall mode (real time: pipe_sync stays inactive there).
std::vector<caf::strong_actor_ptr> spawn_pipes(caf::actor_system& sys,
                                               std::shared_ptr<job_context> job,
                                               const std::vector<stage_actor>& stages,
                                               const coordinator_actor& coordinator,
                                               const adapter_actor& adapter);

} // namespace deepcee::actors
