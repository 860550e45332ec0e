#include "runtime/adapt/path_estimates.hpp"

#include "runtime/base/statistics.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace deepcee::runtime {

namespace {

using device_pair = std::pair<int, int>;

/// What the measured pairs say about one resource.
struct evidence {
  std::set<device_pair> slower;   ///< drifted pairs that crossed it at a lower bandwidth
  std::vector<double> bandwidths; ///< their estimates (B/s)
  bool calm = false;              ///< a measured pair crossed it at its figures
};

/// The resources between nodes (not a node's internal link) on the path from x to y.
std::vector<net_resource> shared_on(const cluster& c, int x, int y) {
  auto path = path_between(c, x, y);
  std::erase_if(path, [](const net_resource& r) { return r.what == net_resource::kind::node_bus; });
  return path;
}

std::map<net_resource, evidence> evidence_of(const cluster& c,
                                             const std::vector<link_estimate>& links) {
  std::map<net_resource, evidence> out;
  for (const auto& l : links) {
    if (l.samples == 0 || !(l.assumed.bandwidth_Bps > 0))
      continue;
    const double ratio = l.estimated.bandwidth_Bps / l.assumed.bandwidth_Bps;
    const bool slower = l.drifted && ratio < 1;
    for (const auto& r : shared_on(c, l.from, l.to)) {
      auto& e = out[r];
      if (slower) {
        e.slower.insert({l.from, l.to});
        e.bandwidths.push_back(l.estimated.bandwidth_Bps);
      } else if (!l.drifted) {
        e.calm = true;
      }
    }
  }
  return out;
}

} // namespace

std::vector<slow_resource> slow_resources(const cluster& c,
                                          const std::vector<link_estimate>& links) {
  const auto seen = evidence_of(c, links);
  std::set<device_pair> unexplained;
  for (const auto& [r, e] : seen)
    unexplained.insert(e.slower.begin(), e.slower.end());
  std::vector<slow_resource> out;
  while (!unexplained.empty()) {
    const std::pair<const net_resource, evidence>* best = nullptr;
    size_t best_count = 0;
    for (const auto& entry : seen) {
      if (entry.second.calm)
        continue;
      const auto count = static_cast<size_t>(
          std::count_if(entry.second.slower.begin(), entry.second.slower.end(),
                        [&](const device_pair& p) { return unexplained.count(p) > 0; }));
      if (count > best_count) {
        best = &entry;
        best_count = count;
      }
    }
    if (!best)
      break; // the rest crossed only resources that calm pairs crossed too
    out.push_back({.resource = best->first, .bandwidth_Bps = median(best->second.bandwidths)});
    for (const auto& p : best->second.slower)
      unexplained.erase(p);
  }
  return out;
}

cluster move_cluster(const environment_monitor& monitor) {
  const auto& assumed = monitor.assumed_cluster();
  const auto links = monitor.links();
  const auto slow = slow_resources(assumed, links);
  cluster out = monitor.estimated_cluster();
  if (slow.empty())
    return out;
  std::set<device_pair> known; // measured, or inferred by the monitor: their estimates hold
  for (const auto& l : links)
    if (l.samples > 0)
      known.insert({l.from, l.to});
  for (const auto& o : monitor.inferred_links())
    known.insert({o.from.index, o.to.index});
  const int n = static_cast<int>(assumed.devices.size());
  for (int x = 0; x < n; ++x)
    for (int y = 0; y < n; ++y) {
      if (x == y || known.count({x, y}))
        continue;
      const auto figures = assumed.link_between(x, y);
      double bandwidth = figures.bandwidth_Bps;
      for (const auto& r : shared_on(assumed, x, y))
        for (const auto& s : slow)
          if (s.resource == r)
            bandwidth = std::min(bandwidth, s.bandwidth_Bps);
      if (bandwidth >= figures.bandwidth_Bps)
        continue;
      link_override o;
      o.from = {link_endpoint::scope::device, x};
      o.to = {link_endpoint::scope::device, y};
      o.directed = true;
      o.bandwidth_Bps = bandwidth;
      o.latency_s = figures.latency_s;
      out.overrides.push_back(o);
    }
  return out;
}

} // namespace deepcee::runtime
