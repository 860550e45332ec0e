#include "runtime/cluster/link_timeline.hpp"

#include "runtime/base/splitmix.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace deepcee::runtime {

namespace {

/// Index of the piece in force at t (pieces are sorted and the first starts at 0).
template <class Piece>
size_t piece_at(const std::vector<Piece>& pieces, double t) {
  size_t k = 0;
  while (k + 1 < pieces.size() && pieces[k + 1].from_s <= t)
    ++k;
  return k;
}

void check_time(double at_s, const std::optional<int>& step) {
  if (step ? *step < 0 : !(at_s >= 0) || !std::isfinite(at_s))
    throw std::invalid_argument("scripted event at a negative or infinite time or step");
}

void check_positive(const std::optional<double>& v, const char* what) {
  if (v && !(*v > 0 && std::isfinite(*v)))
    throw std::invalid_argument(std::string("link change with a non-positive ") + what);
}

template <class Event>
void sort_by_time(std::vector<Event>& events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& x, const Event& y) { return x.at_s < y.at_s; });
}

/// Keeps the time events and the events of started steps (placed at the step's start).
template <class Event>
std::vector<Event> resolved(const std::vector<Event>& events, const std::vector<double>& starts) {
  std::vector<Event> out;
  for (auto e : events) {
    if (e.at_step) {
      if (*e.at_step >= static_cast<int>(starts.size()))
        continue;
      e.at_s = starts[static_cast<size_t>(*e.at_step)];
      e.at_step.reset();
    }
    out.push_back(e);
  }
  return out;
}

/// A uniform draw in [-1, 1] from (seed, t).
double signed_unit(uint64_t seed, double t) {
  const uint64_t bits = splitmix64(seed ^ splitmix64(std::bit_cast<uint64_t>(t)));
  return static_cast<double>(bits >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

std::string name_of(const cluster& c, const link_endpoint& e) {
  switch (e.what) {
  case link_endpoint::scope::region:
    return c.regions[static_cast<size_t>(e.index)].name;
  case link_endpoint::scope::node:
    return c.nodes[static_cast<size_t>(e.index)].name;
  case link_endpoint::scope::device:
    return c.devices[static_cast<size_t>(e.index)].name;
  }
  return "?";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string describe_link(const cluster& c, const link_change& ch) {
  std::string s = ch.any_peer ? "links of " + name_of(c, ch.a)
                              : "link " + name_of(c, ch.a) + "<->" + name_of(c, ch.b);
  if (ch.bandwidth_Bps)
    s += " bandwidth " + number(*ch.bandwidth_Bps * 8 / 1e6) + " Mbps";
  if (ch.bandwidth_scale)
    s += " bandwidth x" + number(*ch.bandwidth_scale);
  if (ch.latency_s)
    s += " latency " + number(*ch.latency_s * 1e3) + " ms";
  if (ch.latency_scale)
    s += " latency x" + number(*ch.latency_scale);
  if (ch.jitter)
    s += " jitter +-" + number(*ch.jitter * 100) + "% (seed " + std::to_string(ch.seed) + ")";
  return s;
}

} // namespace

std::vector<described_event> link_timeline::describe(const cluster& c) const {
  std::vector<described_event> out;
  for (const auto& ch : changes_)
    out.push_back({ch.at_s, ch.at_step, describe_link(c, ch), false, ch.line});
  for (const auto& d : devices_)
    out.push_back({d.at_s, d.at_step,
                   "device " + c.devices[static_cast<size_t>(d.device)].name + " slowdown x" +
                       number(d.slowdown),
                   false, d.line});
  for (const auto& n : nodes_)
    out.push_back({n.at_s, n.at_step,
                   "node " + c.nodes[static_cast<size_t>(n.node)].name + " " +
                       std::string(to_string(n.action)),
                   n.action == node_action::kill, n.line});
  std::stable_sort(out.begin(), out.end(), [](const described_event& a, const described_event& b) {
    if (a.at_step.has_value() != b.at_step.has_value())
      return !a.at_step;
    return a.at_step ? *a.at_step < *b.at_step : a.at_s < b.at_s;
  });
  return out;
}

std::string_view to_string(node_action a) {
  switch (a) {
  case node_action::stop:
    return "stop";
  case node_action::resume:
    return "resume";
  case node_action::kill:
    return "kill";
  case node_action::partition:
    return "partition";
  case node_action::heal:
    return "heal";
  }
  return "?";
}

link_timeline::link_timeline(std::vector<link_change> changes, std::vector<device_change> devices,
                             std::vector<node_change> nodes)
    : changes_(std::move(changes)), devices_(std::move(devices)), nodes_(std::move(nodes)) {
  for (const auto& ch : changes_) {
    check_time(ch.at_s, ch.at_step);
    check_positive(ch.bandwidth_Bps, "bandwidth");
    check_positive(ch.bandwidth_scale, "bandwidth scale");
    check_positive(ch.latency_scale, "latency scale");
    if (ch.latency_s && !(*ch.latency_s >= 0))
      throw std::invalid_argument("link change with a negative latency");
    if (ch.jitter && !(*ch.jitter >= 0 && *ch.jitter < 1))
      throw std::invalid_argument("link change with a jitter outside [0, 1)");
  }
  for (const auto& d : devices_) {
    check_time(d.at_s, d.at_step);
    if (!(d.slowdown > 0 && std::isfinite(d.slowdown)))
      throw std::invalid_argument("device change with a non-positive slowdown");
  }
  for (const auto& n : nodes_)
    check_time(n.at_s, n.at_step);
  sort_by_time(changes_);
  sort_by_time(devices_);
  sort_by_time(nodes_);
}

bool link_timeline::has_step_events() const {
  const auto stepped = [](const auto& e) { return e.at_step.has_value(); };
  return std::any_of(changes_.begin(), changes_.end(), stepped) ||
         std::any_of(devices_.begin(), devices_.end(), stepped) ||
         std::any_of(nodes_.begin(), nodes_.end(), stepped);
}

link_timeline link_timeline::resolve_steps(const std::vector<double>& step_starts) const {
  return link_timeline(resolved(changes_, step_starts), resolved(devices_, step_starts),
                       resolved(nodes_, step_starts));
}

namespace {

/// Splits `events` as take_injected says (see link_timeline.hpp).
template <class Event>
void split_injected(const std::vector<Event>& events, int next_step, double start_s,
                    std::vector<Event>& due, std::vector<Event>& pending) {
  for (auto e : events) {
    if (e.at_step && *e.at_step > next_step) {
      pending.push_back(e);
      continue;
    }
    if (e.at_step || e.at_s < start_s)
      e.at_s = start_s;
    e.at_step.reset();
    due.push_back(e);
  }
}

template <class Event>
std::vector<Event> concatenated(std::vector<Event> a, const std::vector<Event>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

injection_split take_injected(const link_timeline& injected, int next_step, double start_s) {
  if (next_step < 0 || !std::isfinite(start_s) || start_s < 0)
    throw std::invalid_argument("injection at a negative step or time");
  std::vector<link_change> links_due, links_later;
  std::vector<device_change> devices_due, devices_later;
  std::vector<node_change> nodes_due, nodes_later;
  split_injected(injected.changes(), next_step, start_s, links_due, links_later);
  split_injected(injected.device_changes(), next_step, start_s, devices_due, devices_later);
  split_injected(injected.node_changes(), next_step, start_s, nodes_due, nodes_later);
  return {link_timeline(std::move(links_due), std::move(devices_due), std::move(nodes_due)),
          link_timeline(std::move(links_later), std::move(devices_later), std::move(nodes_later))};
}

injection_split split_step_events(const link_timeline& script) {
  const auto part = [](const auto& events, bool stepped) {
    auto out = events;
    std::erase_if(out, [&](const auto& e) { return e.at_step.has_value() != stepped; });
    return out;
  };
  return {link_timeline(part(script.changes(), false), part(script.device_changes(), false),
                        part(script.node_changes(), false)),
          link_timeline(part(script.changes(), true), part(script.device_changes(), true),
                        part(script.node_changes(), true))};
}

namespace {

bool within(int index, size_t count) {
  return index >= 0 && static_cast<size_t>(index) < count;
}

bool endpoint_fits(const link_endpoint& e, const cluster& c) {
  switch (e.what) {
  case link_endpoint::scope::region:
    return within(e.index, c.regions.size());
  case link_endpoint::scope::node:
    return within(e.index, c.nodes.size());
  case link_endpoint::scope::device:
    return within(e.index, c.devices.size());
  }
  return false;
}

[[noreturn]] void does_not_fit(const char* what, int64_t line) {
  throw std::invalid_argument("the event of line " + std::to_string(line) + " names a " + what +
                              " the cluster does not have");
}

} // namespace

void check_fits(const link_timeline& t, const cluster& c) {
  for (const auto& ch : t.changes())
    if (!endpoint_fits(ch.a, c) || (!ch.any_peer && !endpoint_fits(ch.b, c)))
      does_not_fit("region, node or device", ch.line);
  for (const auto& d : t.device_changes())
    if (!within(d.device, c.devices.size()))
      does_not_fit("device", d.line);
  for (const auto& n : t.node_changes())
    if (!within(n.node, c.nodes.size()))
      does_not_fit("node", n.line);
}

link_timeline merged(const link_timeline& script, const link_timeline& more) {
  // The constructor's stable sort by time keeps `script`'s events first at equal times.
  return link_timeline(concatenated(script.changes(), more.changes()),
                       concatenated(script.device_changes(), more.device_changes()),
                       concatenated(script.node_changes(), more.node_changes()));
}

std::vector<link_timeline::piece> link_timeline::history(const cluster& c, int x, int y) const {
  std::vector<piece> out{{0.0, c.link_between(x, y)}};
  if (x == y)
    return out; // a device to itself is free whatever the network does
  const bool same_node = c.level_between(x, y) == link_level::same_node;
  for (const auto& ch : changes_) {
    if (ch.at_step)
      continue; // not resolved yet
    // Like a cluster override, a region-wide change is about the network between hosts,
    // not the bus inside one.
    const bool regional = ch.a.what == link_endpoint::scope::region ||
                          (!ch.any_peer && ch.b.what == link_endpoint::scope::region);
    if (regional && same_node)
      continue;
    const bool hit = ch.any_peer
                         ? endpoint_contains(c, ch.a, x) || endpoint_contains(c, ch.a, y)
                         : (endpoint_contains(c, ch.a, x) && endpoint_contains(c, ch.b, y)) ||
                               (endpoint_contains(c, ch.a, y) && endpoint_contains(c, ch.b, x));
    if (!hit)
      continue;
    piece next = out.back();
    next.from_s = ch.at_s;
    if (ch.bandwidth_Bps)
      next.params.bandwidth_Bps = *ch.bandwidth_Bps;
    if (ch.latency_s)
      next.params.latency_s = *ch.latency_s;
    if (ch.bandwidth_scale)
      next.params.bandwidth_Bps *= *ch.bandwidth_scale;
    if (ch.latency_scale)
      next.params.latency_s *= *ch.latency_scale;
    if (ch.jitter) {
      next.jitter = *ch.jitter;
      // Each pair draws its own factors: a jitter is noise per transfer, not per script.
      next.seed = splitmix64(
          ch.seed ^ splitmix64((static_cast<uint64_t>(x) << 32) | static_cast<uint32_t>(y)));
    }
    if (out.back().from_s == ch.at_s)
      out.back() = next;
    else
      out.push_back(next);
  }
  return out;
}

std::vector<device_piece> link_timeline::device_history(const cluster& c, int device) const {
  struct change {
    double at_s;
    int64_t order;
    std::optional<double> slowdown;
    std::optional<node_action> action;
  };
  std::vector<change> all;
  const int node = c.devices[static_cast<size_t>(device)].node;
  for (const auto& d : devices_)
    if (!d.at_step && d.device == device)
      all.push_back({d.at_s, static_cast<int64_t>(all.size()), d.slowdown, {}});
  for (const auto& n : nodes_)
    if (!n.at_step && n.node == node)
      all.push_back({n.at_s, static_cast<int64_t>(all.size()), {}, n.action});
  std::stable_sort(all.begin(), all.end(),
                   [](const change& a, const change& b) { return a.at_s < b.at_s; });
  std::vector<device_piece> out{{0.0, 1.0, false}};
  double slowdown = 1;
  bool stopped = false;
  bool killed = false;
  for (const auto& ch : all) {
    if (killed)
      break;
    if (ch.slowdown)
      slowdown = *ch.slowdown;
    else if (*ch.action == node_action::kill)
      killed = true;
    else
      stopped = *ch.action == node_action::stop || *ch.action == node_action::partition;
    const device_piece next{ch.at_s, stopped || killed ? 0.0 : 1.0 / slowdown, killed};
    if (out.back().from_s == ch.at_s)
      out.back() = next;
    else
      out.push_back(next);
  }
  return out;
}

link_params params_at(const std::vector<link_timeline::piece>& pieces, double t_s) {
  return pieces[piece_at(pieces, t_s)].params;
}

double drain_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                      double bytes) {
  if (bytes <= 0)
    return 0.0;
  size_t k = piece_at(pieces, start_s);
  const auto& first = pieces[k];
  // A jittered transfer drains as if its bytes were scaled by 1 / factor.
  if (first.jitter > 0)
    bytes /= 1.0 + first.jitter * signed_unit(first.seed, start_s);
  double t = start_s;
  double left = bytes;
  for (;;) {
    const double bw = pieces[k].params.bandwidth_Bps;
    if (std::isinf(bw))
      return t - start_s;
    const double until =
        k + 1 < pieces.size() ? pieces[k + 1].from_s : std::numeric_limits<double>::infinity();
    const double need = left / bw;
    if (t + need <= until)
      return t + need - start_s;
    left -= (until - t) * bw;
    t = until;
    ++k;
  }
}

double transfer_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                         double bytes) {
  return params_at(pieces, start_s).latency_s + drain_duration(pieces, start_s, bytes);
}

std::string stopped_message(const std::vector<device_piece>& pieces, const std::string& node) {
  char at[32];
  std::snprintf(at, sizeof at, "%.3f", pieces.back().from_s);
  return "node " + node + (pieces.back().killed ? " was killed" : " stopped for good") + " at " +
         at + " s: the job stops";
}

double work_duration(const std::vector<device_piece>& pieces, double start_s, double work_s) {
  if (work_s <= 0)
    return 0.0;
  size_t k = piece_at(pieces, start_s);
  double t = start_s;
  double elapsed = 0; // kept apart from t so that an unchanged device returns work_s exactly
  double left = work_s;
  for (;;) {
    const double rate = pieces[k].rate;
    const double until =
        k + 1 < pieces.size() ? pieces[k + 1].from_s : std::numeric_limits<double>::infinity();
    if (rate > 0 && t + left / rate <= until)
      return elapsed + left / rate;
    if (std::isinf(until))
      return std::numeric_limits<double>::infinity();
    left -= (until - t) * rate;
    elapsed += until - t;
    t = until;
    ++k;
  }
}

} // namespace deepcee::runtime
