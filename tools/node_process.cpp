#include "tools/node_process.hpp"

#include "actors/job/heartbeat_actor.hpp"

#include <cmath>
#include <stdexcept>

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

} // namespace deepcee::tools
