#include "runtime/adapt/active_probe.hpp"

#include "runtime/cluster/network_path.hpp"
#include "runtime/sim/simulator_world.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::runtime {

namespace {

/// The devices `p` runs on.
std::set<int> devices_of(const plan& p) {
  std::set<int> out;
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages)
      out.insert(st.devices.begin(), st.devices.end());
  return out;
}

/// Every resource on a path between two devices of `p`: what the plan may occupy in a step
/// (its transfers, its all-reduce rings and gradient exchanges). An over-estimate on
/// purpose: a probe that might share a queue with the plan is charged as if it did.
std::set<net_resource> resources_of(const cluster& c, const plan& p) {
  std::set<net_resource> out;
  const auto devices = devices_of(p);
  for (int x : devices)
    for (int y : devices)
      for (const auto& r : path_between(c, x, y))
        out.insert(r);
  return out;
}

} // namespace

std::set<std::pair<int, int>> measured_pairs(const plan& p) {
  std::set<std::pair<int, int>> out;
  for (const auto& pipe : p.pipelines)
    for (size_t s = 0; s + 1 < pipe.stages.size(); ++s) {
      const auto& a = pipe.stages[s];
      const auto& b = pipe.stages[s + 1];
      for (const auto& rows : rows_between(a.samples, b.samples)) {
        const int from = a.devices[rows.from], to = b.devices[rows.to];
        if (from == to)
          continue;
        out.insert({from, to});
        out.insert({to, from});
      }
    }
  return out;
}

probe_round probes_needed(const environment_monitor& monitor, const plan& in_force, double step_s,
                          const probe_options& options, bool watch_all) {
  probe_round round;
  const auto measured = measured_pairs(in_force);
  std::vector<link_estimate> probed;
  for (const auto& l : monitor.links())
    if ((l.drifted || watch_all) && measured.count({l.from, l.to}) == 0)
      probed.push_back(l);
  const int n = std::max(options.transfers, 1);
  for (const auto& l : probed) {
    const double fits = options.budget * step_s * l.estimated.bandwidth_Bps /
                        (n * static_cast<double>(probed.size()));
    const double bytes = std::clamp(std::isfinite(fits) ? fits : options.max_bytes,
                                    options.min_bytes, options.max_bytes);
    round.links.push_back({l.from, l.to, std::floor(bytes), n});
  }
  const auto seen = monitor.measured_devices(in_force);
  for (const auto& d : monitor.devices())
    if ((d.drifted || watch_all) && seen.count(d.device) == 0)
      round.devices.push_back({d.device, std::max(options.transfers, 1)});
  if (!round.empty())
    round.slack_s = monitor.earliest_send_s(in_force);
  return round;
}

probe_outcome run_probes(const cluster& c, const profile_table& profile, const plan& in_force,
                         const link_timeline& timeline, const probe_round& round, double at_s) {
  probe_outcome out;
  const auto plan_resources = resources_of(c, in_force);
  double free_at = at_s; // the round's transfers go one after another
  for (const auto& probe : round.links) {
    const auto history = sim_detail::capped_history(c, timeline, probe.from, probe.to);
    for (int k = 0; k < probe.transfers; ++k) {
      link_observation o;
      o.from = probe.from;
      o.to = probe.to;
      o.bytes = probe.bytes;
      o.start_s = free_at;
      o.drained_s = free_at + drain_duration(history, free_at, probe.bytes);
      o.arrival_s = o.drained_s + params_at(history, free_at).latency_s;
      free_at = o.drained_s;
      out.transfers.push_back(o);
    }
    const auto path = path_between(c, probe.from, probe.to);
    const bool shared = std::any_of(path.begin(), path.end(), [&](const net_resource& r) {
      return plan_resources.count(r) > 0;
    });
    if (shared)
      out.hold_s = std::max(out.hold_s, free_at - at_s - round.slack_s);
  }
  const auto used = devices_of(in_force);
  for (const auto& probe : round.devices) {
    const auto& dev = c.devices.at(static_cast<size_t>(probe.device));
    const double nominal = profile.cost(dev, 0, in_force.micro_batch_size).f_s;
    if (!(nominal > 0))
      continue;
    const auto rates = timeline.device_history(c, probe.device);
    double at = at_s;
    for (int k = 0; k < probe.ops; ++k) {
      const double took = work_duration(rates, at, nominal);
      // A stopped or killed node's device answers no probe: nothing is learnt.
      if (!std::isfinite(took))
        break;
      out.slowdowns.push_back({probe.device, took / nominal});
      at += took;
    }
    if (used.count(probe.device) > 0)
      out.hold_s = std::max(out.hold_s, at - at_s);
  }
  return out;
}

} // namespace deepcee::runtime
