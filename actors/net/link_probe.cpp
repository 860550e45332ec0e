#include "actors/net/link_probe.hpp"

#include <caf/typed_event_based_actor.hpp>

namespace deepcee::actors {

link_probe_actor spawn_link_probe(caf::actor_system& sys, std::shared_ptr<link_peers> peers,
                                  std::shared_ptr<link_reports> reports) {
  return sys.spawn([peers, reports](link_probe_actor::pointer) -> link_probe_actor::behavior_type {
    return {
        [](const std::string& payload) { return static_cast<int64_t>(payload.size()); },
        [peers](peer_atom, std::string& node, caf::strong_actor_ptr& probe) -> int64_t {
          if (!probe)
            return -1;
          peers->add(std::move(node), caf::actor_cast<link_probe_actor>(std::move(probe)));
          return 0;
        },
        [reports](const std::string& node, std::string& rows) -> int64_t {
          return reports ? static_cast<int64_t>(reports->add(node, std::move(rows))) : -1;
        },
    };
  });
}

} // namespace deepcee::actors
