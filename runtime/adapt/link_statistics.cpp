#include "runtime/adapt/link_statistics.hpp"

#include "runtime/adapt/active_probe.hpp"

namespace deepcee::runtime {

void link_statistics::add(int from, int to, double bytes) {
  auto& l = links_[{from, to}];
  ++l.transfers;
  l.bytes += bytes;
}

std::vector<link_report> link_reports(const environment_monitor& monitor,
                                      const link_statistics& stats, const plan& in_force) {
  std::map<std::pair<int, int>, link_estimate> estimates;
  for (const auto& e : monitor.links())
    estimates[{e.from, e.to}] = e;
  std::vector<link_report> out;
  for (const auto& pair : measured_pairs(in_force)) {
    link_report r{.from = pair.first, .to = pair.second};
    r.assumed = monitor.assumed_cluster().link_between(pair.first, pair.second);
    r.estimated = r.assumed;
    if (auto e = estimates.find(pair); e != estimates.end()) {
      r.estimated = e->second.estimated;
      r.samples = e->second.samples;
      r.drifted = e->second.drifted;
    }
    if (auto t = stats.links().find(pair); t != stats.links().end())
      r.carried = t->second;
    out.push_back(r);
  }
  return out;
}

} // namespace deepcee::runtime
