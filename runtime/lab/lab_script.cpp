#include "runtime/lab/lab_script.hpp"

#include "runtime/base/errors.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace deepcee::runtime {

namespace {

/// The node an endpoint lies in, if it names a node or a device.
std::optional<int> node_of(const cluster& c, const link_endpoint& e) {
  if (e.what == link_endpoint::scope::node)
    return e.index;
  if (e.what == link_endpoint::scope::device)
    return c.devices[static_cast<size_t>(e.index)].node;
  return std::nullopt;
}

/// An event of kind `what` at the time (or step) and line of the script's `change`.
template <class Change>
lab_event timed(lab_event::kind what, const Change& change) {
  lab_event e;
  e.what = what;
  e.at_s = change.at_s;
  e.at_step = change.at_step;
  e.line = change.line;
  return e;
}

void add_both_ends(std::vector<lab_port_ref>& out, int link) {
  out.push_back({link, 0});
  out.push_back({link, 1});
}

/// The ports a link change reshapes: the interfaces of the nodes (or devices' nodes) it
/// names; where it names only regions, the WAN paths between them (or all of one region's,
/// for `of`).
std::vector<lab_port_ref> ports_of(const link_change& ch, const cluster& c,
                                   const lab_topology& lab) {
  std::vector<lab_port_ref> out;
  std::vector<int> nodes;
  for (const auto* e : {&ch.a, &ch.b})
    if (e == &ch.a || !ch.any_peer)
      if (auto n = node_of(c, *e))
        nodes.push_back(*n);
  for (size_t i = 0; i < lab.links.size(); ++i) {
    const auto& l = lab.links[i];
    const int k = static_cast<int>(i);
    if (!nodes.empty()) {
      if (l.what == lab_link::kind::node && std::count(nodes.begin(), nodes.end(), l.from))
        add_both_ends(out, k);
      continue;
    }
    if (l.what != lab_link::kind::wan)
      continue;
    const int x = ch.a.index, y = ch.b.index;
    if (ch.any_peer ? (l.from == x || l.to == x)
                    : (std::min(x, y) == l.from && std::max(x, y) == l.to))
      add_both_ends(out, k);
  }
  return out;
}

std::optional<double> port_rate(const lab_topology& lab, const lab_port_ref& p) {
  const auto& l = lab.links[static_cast<size_t>(p.link)];
  return p.end == 0 ? l.a.rate_Bps : l.b.rate_Bps;
}

lab_event rate_event(const link_change& ch, const cluster& c, const lab_topology& lab,
                     const std::string& source) {
  auto e = timed(lab_event::kind::rate, ch);
  e.ports = ports_of(ch, c, lab);
  if (e.ports.empty())
    fail_input(source, ch.line, "this change names no path of the lab (its ends share a region)");
  e.bandwidth_Bps = ch.bandwidth_Bps;
  e.bandwidth_scale = ch.bandwidth_scale;
  if (ch.bandwidth_scale)
    for (const auto& p : e.ports)
      if (!port_rate(lab, p))
        fail_input(source, ch.line,
                   "this change scales the interface of " +
                       lab.links[static_cast<size_t>(p.link)].label +
                       ", which the lab leaves unshaped (give the node a nic, or set a bandwidth)");
  if (ch.latency_s || ch.latency_scale)
    e.left_out.push_back("latency");
  if (ch.jitter)
    e.left_out.push_back("jitter");
  return e;
}

lab_event::kind kind_of(node_action a) {
  switch (a) {
  case node_action::stop:
    return lab_event::kind::stop;
  case node_action::resume:
    return lab_event::kind::resume;
  case node_action::kill:
    return lab_event::kind::kill;
  case node_action::partition:
    return lab_event::kind::partition;
  case node_action::heal:
    return lab_event::kind::heal;
  }
  return lab_event::kind::stop;
}

} // namespace

std::vector<lab_event> lab_events(const link_timeline& t, const cluster& c, const lab_topology& lab,
                                  const std::string& source) {
  std::vector<lab_event> out;
  for (const auto& ch : t.changes())
    out.push_back(rate_event(ch, c, lab, source));
  for (const auto& d : t.device_changes()) {
    auto e = timed(lab_event::kind::cpu, d);
    e.node = c.devices[static_cast<size_t>(d.device)].node;
    e.slowdown = d.slowdown;
    out.push_back(std::move(e));
  }
  for (const auto& n : t.node_changes()) {
    auto e = timed(kind_of(n.action), n);
    e.node = n.node;
    out.push_back(std::move(e));
  }
  std::map<int64_t, std::string> texts;
  for (const auto& d : t.describe(c))
    texts[d.line] = d.text;
  for (auto& e : out)
    e.text = texts[e.line];
  std::stable_sort(out.begin(), out.end(), [](const lab_event& a, const lab_event& b) {
    if (a.at_step.has_value() != b.at_step.has_value())
      return !a.at_step;
    return a.at_step ? *a.at_step < *b.at_step : a.at_s < b.at_s;
  });
  return out;
}

std::optional<double> next_rate(const lab_event& e, std::optional<double> now) {
  if (e.bandwidth_Bps)
    return e.bandwidth_Bps;
  if (e.bandwidth_scale && now)
    return *now * *e.bandwidth_scale;
  return now;
}

std::optional<double> cpu_under(const lab_node& n, double slowdown) {
  if (slowdown == 1)
    return n.cpu_cores;
  return n.cpu_cores.value_or(1.0) / slowdown;
}

long long cpu_quota_us(std::optional<double> cores, long long period_us) {
  if (!cores)
    return -1;
  // The kernel refuses quotas below 1 ms.
  return std::max(1000LL, std::llround(*cores * static_cast<double>(period_us)));
}

} // namespace deepcee::runtime
