#include "runtime/sim/simulator_world.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

namespace deepcee::runtime::sim_detail {

namespace {

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
    w.buckets.push_back(std::move(b));
  }
}

struct ring_links {
  double bandwidth = std::numeric_limits<double>::infinity(); ///< bottleneck
  double latency = 0;                                         ///< worst
};

/// The ring's bottleneck at time t; with `per_link_bytes` > 0 its traffic is counted on
/// every link it crosses (and traced from `start`).
ring_links ring(world& w, const std::vector<int>& devs, double t, double per_link_bytes,
                const sim_options& options, sim_result& r, const std::string& name) {
  ring_links out;
  const size_t n = devs.size();
  for (size_t i = 0; i < n && n > 1; ++i) {
    const int x = devs[i];
    const int y = devs[(i + 1) % n];
    const auto params = params_at(w.histories[static_cast<size_t>(w.pair_of(x, y))], t);
    out.bandwidth = std::min(out.bandwidth, params.bandwidth_Bps);
    out.latency = std::max(out.latency, params.latency_s);
    if (per_link_bytes > 0) {
      const int li = w.link_of(x, y);
      auto& link = w.links[static_cast<size_t>(li)];
      const double busy =
          std::isinf(params.bandwidth_Bps) ? 0.0 : per_link_bytes / params.bandwidth_Bps;
      link.bytes += per_link_bytes;
      link.busy += busy;
      if (options.trace)
        r.events.push_back({name, r.device_count + li, t, t + busy});
    }
  }
  return out;
}

/// Ring all-reduce: 2(n-1)/n * bytes over the bottleneck plus 2(n-1) latencies.
double ring_allreduce(world& w, const std::vector<int>& devs, double bytes, double t,
                      const sim_options& options, sim_result& r, const std::string& name) {
  const double n = static_cast<double>(devs.size());
  if (devs.size() < 2)
    return 0.0;
  const double share = 2.0 * (n - 1.0) / n * bytes;
  const auto links = ring(w, devs, t, share, options, r, name);
  return share / links.bandwidth + 2.0 * (n - 1.0) * links.latency;
}

/// Reduce to the region's leader (reduce-scatter, then gather) or broadcast from it
/// (scatter, then all-gather): 2(n-1)/n * bytes over the bottleneck plus n latencies.
double region_phase(world& w, const std::vector<int>& devs, double bytes, double t,
                    const sim_options& options, sim_result& r, const std::string& name) {
  const double n = static_cast<double>(devs.size());
  if (devs.size() < 2)
    return 0.0;
  const double share = 2.0 * (n - 1.0) / n * bytes;
  const auto links = ring(w, devs, t, share, options, r, name);
  return share / links.bandwidth + n * links.latency;
}

double bucket_time(world& w, const bucket& b, double t, const sim_options& options, sim_result& r,
                   const std::string& name) {
  if (b.regions.size() <= 1)
    return ring_allreduce(w, b.holders, b.bytes, t, options, r, name);
  double reduce = 0.0;
  std::vector<int> leaders;
  for (const auto& region : b.regions) {
    reduce = std::max(reduce, region_phase(w, region, b.bytes, t, options, r, name));
    leaders.push_back(region.front());
  }
  const double across = ring_allreduce(w, leaders, b.bytes, t + reduce, options, r, name);
  double broadcast = 0.0;
  for (const auto& region : b.regions)
    broadcast = std::max(broadcast,
                         region_phase(w, region, b.bytes, t + reduce + across, options, r, name));
  return reduce + across + broadcast;
}

} // namespace

double finish_step(world& w, const sim_options& options, sim_result& r,
                   const std::vector<double>& stage_end, std::vector<double>& device_ar,
                   std::vector<double>& device_opt) {
  build_buckets(w);
  // A device's collectives run one at a time, after its stage's last W.
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
    const double end = start + bucket_time(w, b, start, options, r, name);
    for (int d : b.holders) {
      const auto di = static_cast<size_t>(d);
      device_ar[di] += end - start;
      comm_free[di] = end;
      if (options.trace)
        r.events.push_back({name, d, start, end});
    }
  }
  // AdamW: read weights, gradients and both moments; write weights and moments.
  double step_end = 0.0;
  for (const auto& st : w.stages) {
    double bytes = 0.0;
    for (int l = st.first_layer; l < st.last_layer; ++l) {
      const auto& layer = w.model->layers[static_cast<size_t>(l)];
      bytes += static_cast<double>(layer.state_bytes() + layer.param_bytes + layer.optimizer_bytes);
    }
    for (int d : st.devices) {
      const auto di = static_cast<size_t>(d);
      const double bw = w.c->devices[di].mem_bandwidth_Bps;
      const double t = bw > 0 ? bytes / bw : 0.0;
      device_opt[di] += t;
      if (options.trace)
        r.events.push_back({"optimizer", d, comm_free[di], comm_free[di] + t});
      step_end = std::max(step_end, comm_free[di] + t);
    }
  }
  return step_end;
}

} // namespace deepcee::runtime::sim_detail
