#include "tools/profile_links.hpp"

#include "actors/net/link_probe.hpp"
#include "runtime/base/statistics.hpp"
#include "runtime/base/units.hpp"
#include "runtime/cluster/link_fit.hpp"
#include "tools/job_steps.hpp"
#include "tools/node_process.hpp"

#include <caf/after.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>

namespace deepcee::tools {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int fit_rounds = 3;
constexpr int64_t transfer_sizes[] = {64, 4 << 10, 64 << 10, 512 << 10, 1 << 20, 4 << 20};
constexpr int round_trips = 7; ///< per size, after one untimed
/// A link slow enough that a size's median round trip takes this long is fitted on the sizes
/// so far (at least `least_sizes`): at 20 Mbps, up to 1 MiB.
constexpr double long_enough_s = 0.25;
constexpr size_t least_sizes = 4;
/// How long a node may take to time its links; the nodes take turns, so the last waits for
/// every other's.
constexpr auto per_node_allowance = std::chrono::minutes(3);

actors::link_probe_actor reach(caf::actor_system& sys, const runtime::job_config& job,
                               node_network& net, const runtime::node& me, int peer_index) {
  const auto& peer = job.cluster.nodes[static_cast<size_t>(peer_index)];
  const auto at = net.reach(peer_index);
  const auto deadline = clock_type::now() + millis(job.connect_timeout_s);
  while (true) {
    if (auto r = sys.middleman().remote_actor<actors::link_probe_actor>(at.host, at.port))
      return *r;
    if (const auto why = net.refusal(peer_index); !why.empty())
      fail(me.name, why);
    if (clock_type::now() > deadline)
      fail(me.name, "could not reach node " + peer.name + " at " + host_of(peer) + ":" +
                        std::to_string(peer.port) + " within " +
                        runtime::format_duration(job.connect_timeout_s));
    std::this_thread::sleep_for(100ms);
  }
}

/// Introduces this node's `probe` to `peer`'s (an earlier node, just dialled), so that the
/// peer reaches it over this connection instead of dialling back (link_peers).
void introduce(caf::scoped_actor& self, const actors::link_probe_actor& peer,
               const actors::link_probe_actor& probe, const runtime::node& me,
               const runtime::node& to) {
  std::string error;
  self->request(peer, 30s, actors::peer_atom_v, me.name,
                caf::actor_cast<caf::strong_actor_ptr>(probe))
      .receive(
          [&](int64_t answer) {
            if (answer < 0)
              error = "it did not take this node's probe";
          },
          [&](caf::error& e) { error = self->system().render(e); });
  if (!error.empty())
    fail(me.name, "could not introduce itself to node " + to.name + ": " + error);
}

/// The probe of `peer`, a later node, once it has dialled this one and introduced it; fails
/// naming it at `deadline`.
actors::link_probe_actor introduced(const actors::link_peers& peers, const runtime::node& me,
                                    const runtime::node& peer, clock_type::time_point deadline,
                                    double waited_s) {
  while (true) {
    if (auto p = peers.find(peer.name))
      return *p;
    if (clock_type::now() > deadline)
      fail(me.name, "could not reach node " + peer.name + " at " + host_of(peer) + ":" +
                        std::to_string(peer.port) + " within " +
                        runtime::format_duration(waited_s) + ": it did not connect to this node");
    std::this_thread::sleep_for(20ms);
  }
}

/// The median round trip of `bytes` sent to `peer` (its reply: the size).
double round_trip(caf::scoped_actor& self, const actors::link_probe_actor& peer, int64_t bytes,
                  const std::string& me, const std::string& peer_name) {
  const std::string payload(static_cast<size_t>(bytes), 'x');
  std::vector<double> times;
  for (int i = 0; i <= round_trips; ++i) {
    const auto start = clock_type::now();
    std::string error;
    self->request(peer, 30s, payload)
        .receive([](int64_t) {}, [&](caf::error& e) { error = self->system().render(e); });
    if (!error.empty())
      fail(me, "lost node " + peer_name + " while timing its link: " + error);
    if (i > 0)
      times.push_back(std::chrono::duration<double>(clock_type::now() - start).count());
  }
  return runtime::median(std::move(times));
}

runtime::measured_link measure_to(caf::scoped_actor& self, const actors::link_probe_actor& peer,
                                  const runtime::node& me, const runtime::node& to) {
  // A busy host can stall a small transfer longer than the largest one takes: such a
  // round is measured again, every round's medians fitted together, before giving up.
  std::vector<runtime::transfer_sample> samples;
  for (int round = 1;; ++round) {
    for (size_t k = 0; k < std::size(transfer_sizes); ++k) {
      const auto bytes = transfer_sizes[k];
      samples.push_back({double(bytes), round_trip(self, peer, bytes, me.name, to.name)});
      if (k + 1 >= least_sizes && samples.back().seconds > long_enough_s)
        break;
    }
    try {
      const auto fit = runtime::fit_round_trips(samples);
      return {me.name, to.name, fit.latency_s, fit.bandwidth_Bps, 0};
    } catch (const std::invalid_argument& e) {
      if (round == fit_rounds)
        fail(me.name, "link to " + to.name + ": " + e.what() + " after " +
                          std::to_string(fit_rounds) + " rounds (a busy host?)");
    }
  }
}

std::string rows_text(const std::vector<runtime::measured_link>& links) {
  std::ostringstream out;
  out.precision(9);
  for (const auto& l : links)
    out << l.from << ' ' << l.to << ' ' << l.latency_s << ' ' << l.bandwidth_Bps << '\n';
  return out.str();
}

void read_rows(const std::string& text, std::vector<runtime::measured_link>& into) {
  std::istringstream in(text);
  runtime::measured_link l;
  while (in >> l.from >> l.to >> l.latency_s >> l.bandwidth_Bps)
    into.push_back(l);
}

/// The coordinator's node: waits until every other node has reported its links.
void gather(const runtime::job_config& job, const runtime::node& me,
            const actors::link_reports& reports, std::vector<runtime::measured_link>& links) {
  const size_t others = job.cluster.nodes.size() - 1;
  const auto deadline =
      clock_type::now() + millis(job.connect_timeout_s) + per_node_allowance * others;
  while (reports.rows().size() < others) {
    if (clock_type::now() > deadline) {
      std::string missing;
      const auto rows = reports.rows();
      for (const auto& n : job.cluster.nodes)
        if (n.name != me.name && std::none_of(rows.begin(), rows.end(),
                                              [&](const auto& r) { return r.first == n.name; }))
          missing += (missing.empty() ? "" : ", ") + n.name;
      fail(me.name, "no link report from node(s) " + missing);
    }
    std::this_thread::sleep_for(50ms);
  }
  for (const auto& [node, text] : reports.rows())
    read_rows(text, links);
}

/// Waits until node `before` (the previous node) has timed its links and said so (its rows
/// reach this node's probe): two nodes timing at once would share an interface or a WAN path,
/// and each would measure a share of it.
void wait_turn(const runtime::job_config& job, const runtime::node& me, const runtime::node& before,
               const actors::link_reports& reports, int me_index) {
  const auto deadline =
      clock_type::now() + millis(job.connect_timeout_s) + per_node_allowance * me_index;
  while (true) {
    const auto rows = reports.rows();
    if (std::any_of(rows.begin(), rows.end(),
                    [&](const auto& r) { return r.first == before.name; }))
      return;
    if (clock_type::now() > deadline)
      fail(me.name, "node " + before.name + " did not finish timing its links");
    std::this_thread::sleep_for(20ms);
  }
}

/// Sends this node's rows to `to`'s probe: its report to the coordinator's node, or the next
/// node's turn.
void send_rows(caf::scoped_actor& self, const actors::link_probe_actor& to, const runtime::node& me,
               const runtime::node& peer, const std::string& rows) {
  std::string error;
  self->request(to, 30s, me.name, rows)
      .receive([](int64_t) {}, [&](caf::error& e) { error = self->system().render(e); });
  if (!error.empty())
    fail(me.name, "could not send its links to " + peer.name + ": " + error);
}

} // namespace

std::vector<runtime::measured_link> measure_links(const runtime::job_config& job, int me_index,
                                                  std::optional<std::string> token,
                                                  std::FILE* out) {
  const auto& me = job.cluster.nodes[static_cast<size_t>(me_index)];
  const auto& boss = job.cluster.nodes[static_cast<size_t>(job.coordinator_node)];
  const bool coordinator = me_index == job.coordinator_node;
  actors::system_config cfg;
  configure_actors(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.enable-automatic-connections", !token.has_value());
  node_network net(job, me_index, std::move(token)); // outlives the actor system
  caf::actor_system sys{cfg};
  // Every node's probe takes rows: the coordinator's node gathers them, the others take
  // the previous node's as their turn to time.
  auto reports = std::make_shared<actors::link_reports>();
  auto peers = std::make_shared<actors::link_peers>();
  actors::actor_guard guard{sys}; // ends the probe however this returns, so `sys` can end
  auto probe = actors::spawn_link_probe(sys, peers, reports);
  guard.add(probe);
  publish_on(sys, me, net, probe);
  caf::scoped_actor self{sys};
  // The other nodes' probes: this node dials every earlier node and introduces its own probe
  // there; every later node dials this one and introduces its probe here. Two nodes dialling
  // each other at once would lose both connections (link_peers). A later node dials its
  // earlier ones one by one, each within the connect timeout.
  const auto& nodes = job.cluster.nodes;
  const double wait_s = job.connect_timeout_s * static_cast<double>(nodes.size());
  const auto deadline = clock_type::now() + millis(wait_s);
  std::vector<std::optional<actors::link_probe_actor>> probes(nodes.size());
  for (int p = 0; p < me_index; ++p) {
    probes[size_t(p)] = reach(sys, job, net, me, p);
    introduce(self, *probes[size_t(p)], probe, me, nodes[size_t(p)]);
  }
  for (int p = me_index + 1; p < static_cast<int>(nodes.size()); ++p)
    probes[size_t(p)] = introduced(*peers, me, nodes[size_t(p)], deadline, wait_s);
  if (me_index > 0)
    wait_turn(job, me, nodes[size_t(me_index - 1)], *reports, me_index);
  std::vector<runtime::measured_link> links;
  for (int p = 0; p < static_cast<int>(nodes.size()); ++p) {
    const auto& peer = nodes[static_cast<size_t>(p)];
    if (p == me_index)
      continue;
    const auto l = measure_to(self, *probes[size_t(p)], me, peer);
    std::fprintf(out, "node %s: link to %s: latency %s, bandwidth %s\n", me.name.c_str(),
                 peer.name.c_str(), runtime::format_duration(l.latency_s).c_str(),
                 runtime::format_bandwidth(l.bandwidth_Bps).c_str());
    links.push_back(l);
  }
  const int next = me_index + 1;
  if (next < static_cast<int>(nodes.size()))
    send_rows(self, *probes[size_t(next)], me, nodes[size_t(next)], rows_text(links));
  if (coordinator) {
    gather(job, me, *reports, links);
  } else {
    const auto to = *probes[size_t(job.coordinator_node)];
    if (next != job.coordinator_node)
      send_rows(self, to, me, boss, rows_text(links));
    // Serve the others' measurements until the coordinator's node ends.
    self->monitor(to);
    bool ended = false;
    const auto deadline = clock_type::now() + per_node_allowance * job.cluster.nodes.size();
    while (!ended && clock_type::now() < deadline)
      self->receive([&](caf::down_msg&) { ended = true; }, caf::after(200ms) >> [] {});
  }
  std::fflush(out);
  return links;
}

} // namespace deepcee::tools
