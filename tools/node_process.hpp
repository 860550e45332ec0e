#pragma once

#include "actors/job/job_wiring.hpp"
#include "actors/job/node_registry.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "runtime/plan/job_config.hpp"
#include "tools/node_network.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

/// What the coordinator's node (cmd_node.cpp) and a member node (node_member.cpp) of
/// `deepcee node` share: one process of a multi-process job.
namespace deepcee::tools {

using actors::reason_text;

std::string host_of(const runtime::node& n);

/// The node's failure: "node NAME: what", thrown as std::runtime_error (exit 1).
[[noreturn]] void fail(const std::string& node, const std::string& what);

std::chrono::milliseconds millis(double seconds);

/// Node `me`'s heartbeat actor (actors/heartbeat_actor.hpp): `expect` names the peers it
/// must hear from from now on; `notify` is told (stop_atom, reason) when one falls silent.
actors::heartbeat_actor start_heartbeat(caf::actor_system& sys, const runtime::job_config& job,
                                        int me, std::vector<std::string> expect, caf::actor notify,
                                        actors::actor_guard& guard);

/// Listens on node `me`'s port, or fails the node naming the port: CAF itself on the
/// public port (insecure), or CAF on 127.0.0.1 behind the node's gate. `listen(port, host)`
/// is the middleman's publish or open, returning caf::expected<uint16_t>. A port inside the
/// ephemeral range can be busy for an instant (a connection attempt given it as its local
/// port), so it is tried a few times over a second before it counts as in use.
template <class Listen>
void listen_on(caf::actor_system& sys, const runtime::node& me, node_network& net, Listen listen) {
  const auto at = net.caf_listen();
  std::string error;
  const auto once = [&] {
    auto port = listen(at.port, at.host.c_str());
    if (!port) {
      error = "port " + std::to_string(me.port) + " on " + host_of(me) +
              " is in use or unusable (" + sys.render(port.error()) + ")";
      return std::optional<uint16_t>{};
    }
    return std::optional<uint16_t>{*port};
  };
  auto port = once();
  for (int attempt = 0; attempt < 5 && !port && !net.secure(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    port = once();
  }
  if (!port)
    fail(me.name, error);
  for (int attempt = 0; net.secure(); ++attempt) {
    try {
      net.open_gate(*port);
      return;
    } catch (const std::runtime_error& e) {
      if (attempt == 5)
        fail(me.name, e.what());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

/// A node other than the coordinator's: asks the coordinator's node for the job's
/// deployment, spawns its stages from it, joins, and waits for the job's end. Returns the
/// exit code (0 done, 130 the coordinator's node was interrupted); failures throw.
int run_member(caf::actor_system& sys, const runtime::job_config& job, int me, node_network& net,
               actors::actor_guard& guard);

} // namespace deepcee::tools
