#pragma once

#include "actors/device/gpu_all_reduce.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace deepcee::actors {

/// The device group of one stage: its device actors (spawned and linked at start; those on
/// other nodes handed over by the stage and stood in for by remote_device actors, wired into
/// a ring) and the stage's plan, which says how many samples each takes.
struct group_state {
  static inline const char* name = "group";

  std::string where; ///< "pipeline p stage s", for errors
  int flat = 0;      ///< the stage's flat index
  runtime::stage_plan plan;
  int64_t row_values = 0;            ///< values of one sample's activation: T * C
  std::vector<device_actor> devices; ///< by place; invalid until a device apart is handed over
  std::vector<caf::strong_actor_ptr> ring; ///< by place: the device actors themselves
  /// By place: the device runs on another node than the stage. Those are asked first, so
  /// that their work is on its way before this node's devices take the cores.
  std::vector<bool> apart;
  /// Why the group cannot take work yet (its devices on other nodes are not all there):
  /// every request that reaches its devices answers with it. Empty once the ring is wired.
  std::string unready;
  /// NCCL over the devices when they are distinct GPUs of this process; else empty, and
  /// the devices all-reduce by a ring of actor messages.
  gpu_all_reduce_fn gpu_all_reduce;
};

group_actor::behavior_type group_behavior(group_actor::stateful_pointer<group_state> self,
                                          std::shared_ptr<job_context> job, int pipeline,
                                          int stage);

/// Spawns the group of stage `stage` of pipeline `pipeline` linked to `parent` (its stage
/// actor), with one device actor per device of the stage; a failing device fails the
/// group's answer with the device's name, it never ends the group.
template <class Parent>
group_actor spawn_group(Parent* parent, std::shared_ptr<job_context> job, int pipeline, int stage) {
  return parent->template spawn<caf::linked>(group_behavior, std::move(job), pipeline, stage);
}

} // namespace deepcee::actors
