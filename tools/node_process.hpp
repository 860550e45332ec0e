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
#include <set>
#include <string>
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
/// public port (insecure), or CAF on 127.0.0.1 behind the node's gate, on a socket guarded
/// from before it listens (transport/local_guard.hpp). `whom` is published there with its
/// interface `sigs` (a null `whom`: other nodes only connect through the port). A port inside
/// the ephemeral range can be busy for an instant (a connection attempt given it as its local
/// port), so it is tried a few times over a second before it counts as in use.
void listen_on(caf::actor_system& sys, const runtime::node& me, node_network& net,
               caf::strong_actor_ptr whom = nullptr, std::set<std::string> sigs = {});

template <class Handle>
void publish_on(caf::actor_system& sys, const runtime::node& me, node_network& net,
                const Handle& whom) {
  listen_on(sys, me, net, caf::actor_cast<caf::strong_actor_ptr>(whom), sys.message_types(whom));
}

/// A node other than the coordinator's: asks the coordinator's node for the job's
/// deployment, spawns its stages from it, joins, and waits for the job's end. Returns the
/// exit code (0 done, 130 the coordinator's node was interrupted); failures throw.
int run_member(caf::actor_system& sys, const runtime::job_config& job, int me, node_network& net,
               actors::actor_guard& guard);

} // namespace deepcee::tools
