#include "runtime/sim/device_time.hpp"
#include "runtime/sim/simulator_world.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

namespace deepcee::runtime::sim_detail {

namespace {

ring_rt make_ring(world& w, const std::vector<int>& devs);

/// Buckets: consecutive layers held by the same set of stages. Built once per world.
void build_buckets(world& w) {
  if (!w.buckets.empty())
    return;
  const int layers = static_cast<int>(w.model->layers.size());
  std::vector<int> holding;
  for (int l = 0; l < layers; ++l) {
    holding.clear();
    for (size_t s = 0; s < w.stages.size(); ++s)
      if (w.stages[s].first_layer <= l && l < w.stages[s].last_layer)
        holding.push_back(static_cast<int>(s));
    const double bytes = static_cast<double>(w.model->layers[static_cast<size_t>(l)].grad_bytes);
    if (!w.buckets.empty() && w.buckets.back().stages == holding) {
      w.buckets.back().last_layer = l + 1;
      w.buckets.back().bytes += bytes;
      continue;
    }
    bucket b;
    b.first_layer = l;
    b.last_layer = l + 1;
    b.bytes = bytes;
    b.stages = holding;
    for (int s : holding)
      for (int d : w.stages[static_cast<size_t>(s)].devices)
        b.holders.push_back(d);
    // Ring order: by region, then node, then id, so a ring crosses each region boundary
    // once and stays on fast links inside a node.
    const auto& devs = w.c->devices;
    std::sort(b.holders.begin(), b.holders.end(), [&](int x, int y) {
      const auto& a = devs[static_cast<size_t>(x)];
      const auto& c = devs[static_cast<size_t>(y)];
      return std::tie(a.region, a.node, a.id) < std::tie(c.region, c.node, c.id);
    });
    for (int d : b.holders) {
      if (b.regions.empty() || devs[static_cast<size_t>(b.regions.back().front())].region !=
                                   devs[static_cast<size_t>(d)].region)
        b.regions.emplace_back();
      b.regions.back().push_back(d);
    }
    std::vector<int> leaders;
    for (const auto& region : b.regions) {
      b.region_rings.push_back(make_ring(w, region));
      leaders.push_back(region.front());
    }
    b.leaders = make_ring(w, leaders);
    w.buckets.push_back(std::move(b));
  }
}

/// A ring's hops and every resource they occupy, laid out once.
ring_rt make_ring(world& w, const std::vector<int>& devs) {
  ring_rt out;
  out.devs = devs;
  const size_t n = devs.size();
  std::map<int, int> crossed;
  for (size_t i = 0; i < n && n > 1; ++i) {
    const int x = devs[i];
    const int y = devs[(i + 1) % n];
    out.pairs.push_back(w.pair_of(x, y));
    out.routes.push_back(w.link_of(x, y));
    for (int k : w.resources_of(x, y))
      if (++crossed[k] == 1)
        out.res.push_back(k);
  }
  for (const auto& [k, hops] : crossed)
    out.crossings = std::max(out.crossings, static_cast<double>(hops));
  return out;
}

/// One phase of `ring`'s traffic, 2(n-1)/n * bytes per hop, that may start at `t`: it
/// starts once every resource its hops occupy is free of earlier all-reduce traffic and of
/// the step's pipeline transfers (world::ar_free), drains at the bottleneck in force then
/// (a resource that k hops cross gives each 1/k of it), keeps its resources until drained,
/// and pays `latencies` times the worst latency. Returns its end.
double ring_phase(world& w, const ring_rt& ring, double bytes, double t, double latencies,
                  const sim_options& options, sim_result& r, const std::string& name) {
  const size_t n = ring.devs.size();
  if (n < 2)
    return t;
  double start = t;
  for (int k : ring.res)
    start = std::max(start, w.ar_free[static_cast<size_t>(k)]);
  const double share = 2.0 * (static_cast<double>(n) - 1.0) / static_cast<double>(n) * bytes;
  double bandwidth = std::numeric_limits<double>::infinity();
  double latency = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto params = params_at(w.histories[static_cast<size_t>(ring.pairs[i])], start);
    bandwidth = std::min(bandwidth, params.bandwidth_Bps);
    latency = std::max(latency, params.latency_s);
    // Statistics per route, as the pipeline transfers count theirs.
    const auto li = static_cast<size_t>(ring.routes[i]);
    const double busy = std::isinf(params.bandwidth_Bps) ? 0.0 : share / params.bandwidth_Bps;
    w.links[li].bytes += share;
    w.links[li].busy += busy;
    if (options.trace)
      r.events.push_back({name, r.device_count + ring.routes[i], start, start + busy});
  }
  const double drain = std::isinf(bandwidth) ? 0.0 : share * ring.crossings / bandwidth;
  for (int k : ring.res)
    w.ar_free[static_cast<size_t>(k)] = start + drain;
  return start + drain + latencies * latency;
}

/// Ring all-reduce (2(n-1) latencies) with one region; with several, each region reduces
/// to its leader (reduce-scatter, then gather: n latencies), the leaders all-reduce in a
/// ring, and each region broadcasts from its leader (scatter, then all-gather).
double bucket_end(world& w, const bucket& b, double t, const sim_options& options, sim_result& r,
                  const std::string& name) {
  const auto n_of = [](const ring_rt& ring) { return static_cast<double>(ring.devs.size()); };
  if (b.regions.size() <= 1) {
    const auto& ring = b.region_rings.front();
    return ring_phase(w, ring, b.bytes, t, 2.0 * (n_of(ring) - 1.0), options, r, name);
  }
  double reduced = t;
  for (const auto& ring : b.region_rings)
    reduced = std::max(reduced, ring_phase(w, ring, b.bytes, t, n_of(ring), options, r, name));
  const double across =
      ring_phase(w, b.leaders, b.bytes, reduced, 2.0 * (n_of(b.leaders) - 1.0), options, r, name);
  double end = across;
  for (const auto& ring : b.region_rings)
    end = std::max(end, ring_phase(w, ring, b.bytes, across, n_of(ring), options, r, name));
  return end;
}

} // namespace

double finish_step(world& w, const sim_options& options, sim_result& r,
                   const std::vector<double>& stage_end, std::vector<double>& device_ar) {
  build_buckets(w);
  // A device's collectives run one at a time, after its stage's last W.
  // The all-reduce's traffic queues behind the step's pipeline transfers on every resource
  // they share: a resource is free for it once each stage that receives over it has ended
  // its step (its last arrival came before its last op). Both the simulator and the
  // virtual cluster know exactly this, so they time the all-reduce alike.
  w.ar_free.assign(w.resources.size(), 0.0);
  for (const auto& st : w.stages)
    for (const auto& [parts, to] : {std::pair{&st.act_parts, st.next}, {&st.grad_parts, st.prev}})
      for (const auto& pt : *parts)
        for (int k : pt.res)
          w.ar_free[static_cast<size_t>(k)] =
              std::max(w.ar_free[static_cast<size_t>(k)], stage_end[static_cast<size_t>(to)]);
  std::vector<double>& comm_free = w.scratch;
  comm_free.assign(w.c->devices.size(), 0.0);
  for (size_t s = 0; s < w.stages.size(); ++s)
    for (int d : w.stages[s].devices)
      comm_free[static_cast<size_t>(d)] = stage_end[s];
  std::vector<std::pair<double, size_t>> order;
  order.reserve(w.buckets.size());
  for (size_t k = 0; k < w.buckets.size(); ++k) {
    double ready = 0.0;
    for (int s : w.buckets[k].stages)
      ready = std::max(ready, stage_end[static_cast<size_t>(s)]);
    order.emplace_back(ready, k);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [ready, k] : order) {
    const auto& b = w.buckets[k];
    if (b.holders.size() < 2)
      continue;
    double start = ready;
    for (int d : b.holders)
      start = std::max(start, comm_free[static_cast<size_t>(d)]);
    const std::string name =
        "allreduce L" + std::to_string(b.first_layer) +
        (b.last_layer - b.first_layer > 1 ? "-" + std::to_string(b.last_layer - 1) : "");
    const double end = bucket_end(w, b, start, options, r, name);
    for (int d : b.holders) {
      const auto di = static_cast<size_t>(d);
      device_ar[di] += end - start;
      comm_free[di] = end;
      if (options.trace)
        r.events.push_back({name, d, start, end});
    }
  }
  // Each stage reports once its devices' buckets are reduced; the step ends when the
  // coordinator has every report (control messages, simulator.hpp).
  double step_end = 0.0;
  for (size_t s = 0; s < w.stages.size(); ++s) {
    const auto& st = w.stages[s];
    double report = stage_end[s];
    for (int d : st.devices)
      report = std::max(report, comm_free[static_cast<size_t>(d)]);
    step_end = std::max(step_end, report + w.control_latency(st, report));
  }
  return step_end;
}

void begin_step(const world& w, const sim_options& options, sim_result& r, double t0,
                std::vector<double>& device_opt) {
  for (const auto& st : w.stages) {
    const double begin = order_arrives_s(t0, w.control_latency(st, t0));
    for (size_t k = 0; k < st.devices.size(); ++k) {
      const auto di = static_cast<size_t>(st.devices[k]);
      const double t = w.optimizer_time(st, k, begin);
      device_opt[di] += t;
      if (options.trace)
        r.events.push_back({"optimizer", st.devices[k], begin, begin + t});
    }
  }
}

} // namespace deepcee::runtime::sim_detail
