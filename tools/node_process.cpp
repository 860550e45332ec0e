#include "tools/node_process.hpp"

#include "actors/job/heartbeat_actor.hpp"
#include "transport/gate.hpp"
#include "transport/local_guard.hpp"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>
#include <caf/send.hpp>

#include <cmath>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {

std::string host_of(const runtime::node& n) {
  return n.host.empty() ? "127.0.0.1" : n.host;
}

void fail(const std::string& node, const std::string& what) {
  throw std::runtime_error("node " + node + ": " + what);
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1e3));
}

actors::heartbeat_actor start_heartbeat(caf::actor_system& sys, const runtime::job_config& job,
                                        int me, std::vector<std::string> expect, caf::actor notify,
                                        actors::actor_guard& guard) {
  auto beats = actors::spawn_heartbeat(
      sys, job.cluster.nodes[static_cast<size_t>(me)].name, millis(job.heartbeat_interval_s),
      millis(job.heartbeat_timeout_s), std::move(expect), std::move(notify));
  guard.add(beats);
  return beats;
}

namespace {

/// Has CAF's middleman accept on `fd`, a listening socket of this process, as on a port it
/// opened itself (what its publish and open do once they have bound one).
void adopt_listener(caf::actor_system& sys, int fd, caf::strong_actor_ptr whom,
                    std::set<std::string> sigs) {
  auto& mm = sys.middleman();
  auto doorman = mm.backend().new_doorman(fd);
  const auto port = doorman->port();
  caf::anon_send(mm.named_broker<caf::io::basp_broker>(caf::atom("BASP")), caf::publish_atom::value,
                 std::move(doorman), port, std::move(whom), std::move(sigs));
}

/// A socket listening on the node's public port: tried a few times over a second while the
/// port is in use.
int listen_public(const runtime::node& me) {
  std::string error;
  for (int attempt = 0; attempt < 6; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int fd = transport::listen_socket({host_of(me), static_cast<uint16_t>(me.port)}, error);
    if (fd >= 0)
      return fd;
  }
  fail(me.name, "port " + std::to_string(me.port) + " on " + host_of(me) +
                    " is in use or unusable (" + error + ")");
}

} // namespace

void listen_on(caf::actor_system& sys, const runtime::node& me, node_network& net,
               caf::strong_actor_ptr whom, std::set<std::string> sigs) {
  if (!net.secure()) {
    adopt_listener(sys, listen_public(me), std::move(whom), std::move(sigs));
    return;
  }
  transport::guarded_socket inside;
  try {
    inside = transport::listen_guarded();
  } catch (const std::runtime_error& e) {
    fail(me.name, e.what());
  }
  adopt_listener(sys, inside.fd, std::move(whom), std::move(sigs));
  for (int attempt = 0;; ++attempt) {
    try {
      net.open_gate(inside.port);
      return;
    } catch (const std::runtime_error& e) {
      if (attempt == 5)
        fail(me.name, e.what());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

} // namespace deepcee::tools
