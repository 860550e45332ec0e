#include "runtime/link_timeline.hpp"

#include "runtime/units_toml.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace deepcee::runtime {

namespace {

/// Index of the piece in force at t (pieces are sorted and the first starts at 0).
size_t piece_at(const std::vector<link_timeline::piece>& pieces, double t) {
  size_t k = 0;
  while (k + 1 < pieces.size() && pieces[k + 1].from_s <= t)
    ++k;
  return k;
}

} // namespace

link_timeline::link_timeline(std::vector<link_change> changes) : changes_(std::move(changes)) {
  for (const auto& ch : changes_) {
    if (!(ch.at_s >= 0) || !std::isfinite(ch.at_s))
      throw std::invalid_argument("link change at a negative or infinite time");
    if (ch.bandwidth_Bps && !(*ch.bandwidth_Bps > 0))
      throw std::invalid_argument("link change with a non-positive bandwidth");
    if (ch.latency_s && !(*ch.latency_s >= 0))
      throw std::invalid_argument("link change with a negative latency");
  }
  std::stable_sort(changes_.begin(), changes_.end(),
                   [](const link_change& x, const link_change& y) { return x.at_s < y.at_s; });
}

std::vector<link_timeline::piece> link_timeline::history(const cluster& c, int x, int y) const {
  std::vector<piece> out{{0.0, c.link_between(x, y)}};
  if (x == y)
    return out; // a device to itself is free whatever the network does
  const bool same_node = c.level_between(x, y) == link_level::same_node;
  for (const auto& ch : changes_) {
    // Like a cluster override, a region-wide change is about the network between hosts,
    // not the bus inside one.
    const bool regional =
        ch.a.what == link_endpoint::scope::region || ch.b.what == link_endpoint::scope::region;
    if (regional && same_node)
      continue;
    const bool hit =
        (endpoint_contains(c, ch.a, x) && endpoint_contains(c, ch.b, y)) || (endpoint_contains(c, ch.a, y) && endpoint_contains(c, ch.b, x));
    if (!hit)
      continue;
    link_params next = out.back().params;
    if (ch.bandwidth_Bps)
      next.bandwidth_Bps = *ch.bandwidth_Bps;
    if (ch.latency_s)
      next.latency_s = *ch.latency_s;
    if (out.back().from_s == ch.at_s)
      out.back().params = next;
    else
      out.push_back({ch.at_s, next});
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

link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source) {
  using namespace toml_input;
  toml::table root;
  try {
    root = toml::parse(toml_text, source.string());
  } catch (const toml::parse_error& e) {
    fail_input(source, static_cast<int64_t>(e.source().begin.line), std::string(e.description()));
  }
  check_keys(source, root, {"change"}, "the timeline");
  std::vector<link_change> changes;
  const toml::node* list = root.get("change");
  if (!list)
    return link_timeline{};
  if (!list->is_array_of_tables())
    fail_at(source, *list, "'change' must be an array of tables ([[change]])");
  const auto endpoint = [&](const toml::node& n) -> link_endpoint {
    const std::string name = get_string(source, n, "'between' entry");
    if (auto i = c.find_device(name))
      return {link_endpoint::scope::device, *i};
    if (auto i = c.find_node(name))
      return {link_endpoint::scope::node, *i};
    if (auto i = c.find_region(name))
      return {link_endpoint::scope::region, *i};
    fail_at(source, n, "unknown region, node or device '" + name + "'");
  };
  for (const auto& item : *list->as_array()) {
    const auto& t = as_table(source, item, "[[change]]");
    check_keys(source, t, {"at", "between", "bandwidth", "latency"}, "[[change]]");
    link_change ch;
    ch.line = line_of(t);
    const toml::node* at = t.get("at");
    if (!at)
      fail_at(source, t, "a [[change]] needs 'at' (seconds from the start)");
    ch.at_s = get_quantity(source, *at, "'at'", parse_duration, 1.0, "\"30s\"");
    if (ch.at_s < 0)
      fail_at(source, *at, "'at' must not be negative");
    const toml::node* between = t.get("between");
    const toml::array* pair = between ? between->as_array() : nullptr;
    if (!pair || pair->size() != 2)
      fail_at(source, between ? *between : static_cast<const toml::node&>(t),
              "a [[change]] needs 'between = [a, b]' naming two regions, nodes or devices");
    ch.a = endpoint(*pair->get(0));
    ch.b = endpoint(*pair->get(1));
    if (auto n = t.get("bandwidth")) {
      ch.bandwidth_Bps =
          get_quantity(source, *n, "'bandwidth'", parse_bandwidth, 1e6 / 8, "\"50Mbps\"");
      if (!(*ch.bandwidth_Bps > 0))
        fail_at(source, *n, "'bandwidth' must be positive");
    }
    if (auto n = t.get("latency")) {
      ch.latency_s = get_quantity(source, *n, "'latency'", parse_duration, 1e-3, "\"80ms\"");
      if (*ch.latency_s < 0)
        fail_at(source, *n, "'latency' must not be negative");
    }
    if (!ch.bandwidth_Bps && !ch.latency_s)
      fail_at(source, t, "a [[change]] must set 'bandwidth', 'latency' or both");
    changes.push_back(ch);
  }
  return link_timeline(std::move(changes));
}

link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail_input(path, 0, "cannot read the link timeline");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_link_timeline(text.str(), c, path);
}

} // namespace deepcee::runtime
