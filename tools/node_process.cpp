#include "tools/node_process.hpp"

#include "actors/device_actor.hpp"
#include "actors/heartbeat_actor.hpp"
#include "actors/stage_actor.hpp"

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <cmath>
#include <stdexcept>

namespace deepcee::tools {

std::string reason_text(caf::actor_system& sys, const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return sys.render(e);
}

actor_guard::~actor_guard() {
  caf::scoped_actor self{sys};
  for (auto& a : actors)
    self->send_exit(caf::actor_cast<caf::actor>(a), caf::exit_reason::user_shutdown);
}

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
                                        actor_guard& guard) {
  auto beats = actors::spawn_heartbeat(
      sys, job.cluster.nodes[static_cast<size_t>(me)].name, millis(job.heartbeat_interval_s),
      millis(job.heartbeat_timeout_s), std::move(expect), std::move(notify));
  guard.add(beats);
  return beats;
}

actors::local_part spawn_local_part(caf::actor_system& sys,
                                    const std::shared_ptr<actors::job_context>& job, int node,
                                    actor_guard& guard) {
  actors::local_part part;
  part.node = node;
  for (int32_t k : job->layout.stages_on(node)) {
    const auto [pipeline, stage] = job->stage_at(static_cast<size_t>(k));
    part.stages.push_back(actors::spawn_stage(sys, job, pipeline, stage));
    guard.add(part.stages.back());
  }
  part.devices = actors::spawn_devices_apart(sys, job, node);
  for (const auto& d : part.devices)
    if (d)
      guard.add(d);
  return part;
}

} // namespace deepcee::tools
