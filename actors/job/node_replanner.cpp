#include "actors/job/node_replanner.hpp"

#include "actors/job/job_wiring.hpp"
#include "actors/job/node_deployment.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <utility>
#include <vector>

namespace deepcee::actors {

namespace {

struct replanner_state {
  static inline const char* name = "node_replanner";
  runtime::cluster cluster;
  std::string node;
  int index = 0;
  runtime::link_timeline script;
  std::chrono::steady_clock::time_point epoch;
  /// Every actor it spawned; not linked, so that the coordinator can stop an old plan's
  /// stages without ending the replanner. They end with it.
  std::shared_ptr<std::vector<caf::strong_actor_ptr>> spawned =
      std::make_shared<std::vector<caf::strong_actor_ptr>>();
};

using self_ptr = node_replanner_actor::stateful_pointer<replanner_state>;

node_replanner_actor::behavior_type
replanner_behavior(self_ptr self, runtime::cluster cluster, std::string node, int index,
                   runtime::link_timeline script, std::chrono::steady_clock::time_point epoch) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.cluster = std::move(cluster);
  st.node = std::move(node);
  st.index = index;
  st.script = std::move(script);
  st.epoch = epoch;
  self->attach_functor([spawned = st.spawned](const caf::error&) {
    for (auto& a : *spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  });
  return {
      [self](const job_deployment& d) -> caf::result<stage_wiring> {
        auto& s = self->state;
        try {
          auto job = accept_deployment(d, s.cluster, s.node, s.script);
          job->epoch = s.epoch;
          const auto part =
              spawn_local_part(self->system(), job, s.index, [&](caf::strong_actor_ptr a) {
                s.spawned->push_back(std::move(a));
              });
          stage_wiring w;
          for (const auto& stage : part.stages)
            w.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(stage));
          for (const auto& device : part.devices)
            w.devices.push_back(caf::actor_cast<caf::strong_actor_ptr>(device));
          spdlog::info("node {}: spawned {} stage(s) of the re-plan", s.node, w.stages.size());
          return w;
        } catch (const std::exception& e) {
          return make_error(messages::error_code::bad_input,
                            "node " + self->state.node + ": re-plan: " + e.what());
        }
      },
  };
}

} // namespace

node_replanner_actor spawn_node_replanner(caf::actor_system& sys, runtime::cluster cluster,
                                          std::string node, int index,
                                          runtime::link_timeline script,
                                          std::chrono::steady_clock::time_point epoch) {
  return sys.spawn(replanner_behavior, std::move(cluster), std::move(node), index,
                   std::move(script), epoch);
}

} // namespace deepcee::actors
