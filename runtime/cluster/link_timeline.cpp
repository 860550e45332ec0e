#include "runtime/cluster/link_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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
    const bool hit = (endpoint_contains(c, ch.a, x) && endpoint_contains(c, ch.b, y)) ||
                     (endpoint_contains(c, ch.a, y) && endpoint_contains(c, ch.b, x));
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

} // namespace deepcee::runtime
