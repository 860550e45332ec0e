#include "actors/net/link_probe.hpp"

#include <caf/typed_event_based_actor.hpp>

namespace deepcee::actors {

link_probe_actor spawn_link_probe(caf::actor_system& sys, std::shared_ptr<link_reports> reports) {
  return sys.spawn([reports](link_probe_actor::pointer) -> link_probe_actor::behavior_type {
    return {
        [](const std::string& payload) { return static_cast<int64_t>(payload.size()); },
        [reports](const std::string& node, std::string& rows) -> int64_t {
          return reports ? static_cast<int64_t>(reports->add(node, std::move(rows))) : -1;
        },
    };
  });
}

} // namespace deepcee::actors
