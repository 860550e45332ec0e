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

#include <limits>
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

/// How long a probe's peer has to answer. A peer that does not is lost or cut off: the
/// recovery's business, not the probe's; its round answers without that arrival.
constexpr auto probe_answer_bound = std::chrono::seconds(10);

double seconds_since(std::chrono::steady_clock::time_point epoch,
                     std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t - epoch).count();
}

/// `n` probe messages of `bytes` to `peer`, back to back on the connection the job's
/// messages use; the answer once each has arrived or its bound has passed.
caf::result<probe_times> send_probes(self_ptr self, const caf::strong_actor_ptr& peer, int32_t n,
                                     int64_t bytes) {
  const auto to = caf::actor_cast<node_replanner_actor>(peer);
  if (!to || n <= 0 || bytes < 0)
    return make_error(messages::error_code::bad_input, "probe: no peer or nothing to send");
  auto promise = std::make_shared<caf::typed_response_promise<probe_times>>(
      self->make_response_promise<probe_times>());
  auto times = std::make_shared<probe_times>();
  times->send_s.assign(static_cast<size_t>(n), 0.0);
  times->arrival_s.assign(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
  auto left = std::make_shared<int32_t>(n);
  const auto answered = [promise, times, left] {
    if (--*left == 0)
      promise->deliver(*times);
  };
  for (int32_t k = 0; k < n; ++k) {
    probe_msg m;
    m.bytes.assign(static_cast<size_t>(bytes), uint8_t{0x5a});
    times->send_s[static_cast<size_t>(k)] =
        seconds_since(self->state.epoch, std::chrono::steady_clock::now());
    self->request(to, probe_answer_bound, std::move(m))
        .then(
            [times, answered, k](double arrival) {
              times->arrival_s[static_cast<size_t>(k)] = arrival;
              answered();
            },
            [answered](caf::error&) { answered(); });
  }
  return *promise;
}

/// A probe's arrival on this node's clock: when CAF deserialized it (now, within a process).
double probe_arrival(self_ptr self, const probe_msg& m) {
  const auto epoch = self->state.epoch;
  if (m.arrived_ns == 0)
    return seconds_since(epoch, std::chrono::steady_clock::now());
  const auto arrived = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(m.arrived_ns)));
  return seconds_since(epoch, arrived);
}

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
      [self](probe_atom, const caf::strong_actor_ptr& peer, int32_t n, int64_t bytes) {
        return send_probes(self, peer, n, bytes);
      },
      [self](const probe_msg& m) { return probe_arrival(self, m); },
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
