#include "runtime/planner/plan_builder.hpp"

#include <algorithm>
#include <cstdint>

namespace deepcee::runtime {

std::vector<int> divisors_between(int n, int lo, int hi) {
  // Divisors come in pairs (d, n / d) with d <= sqrt(n): O(sqrt n) work, and no counter
  // that overflows at n = INT_MAX (which made the old loop take n % 0).
  std::vector<int> low, high;
  const int64_t first = std::max(1, lo), last = std::min(n, hi);
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0)
      continue;
    const int64_t pair = n / d;
    if (d >= first && d <= last)
      low.push_back(static_cast<int>(d));
    if (pair != d && pair >= first && pair <= last)
      high.push_back(static_cast<int>(pair));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<int> stage_samples(const cost_cache& costs, const std::vector<int>& devices,
                               int micro_batch, bool proportional) {
  std::vector<double> w(devices.size(), 1.0);
  if (proportional) {
    // Speed at the share a device would get under an equal split: the roofline's
    // efficiency depends on the micro-batch, so this is the rate it will actually run at.
    int typical = std::max(1, micro_batch / static_cast<int>(devices.size()));
    for (size_t i = 0; i < devices.size(); ++i)
      w[i] = costs.speed(devices[i], typical);
  }
  return split_proportional(micro_batch, w, 1);
}

std::optional<plan> build_plan(const cost_cache& costs, const std::vector<pipeline_layout>& layout,
                               int global_batch, const build_options& o, split_memo* memo) {
  const int b = o.micro_batch_size;
  const int pipelines = static_cast<int>(layout.size());
  if (b < 1 || pipelines < 1 || global_batch % b != 0)
    return std::nullopt;
  const int total_micro = global_batch / b;
  if (total_micro < pipelines)
    return std::nullopt;
  const int layers = costs.layer_count();

  plan p;
  p.strategy = o.strategy;
  p.model_name = o.model_name;
  p.model = costs.profiles().model().config;
  p.micro_batch_size = b;
  for (const auto& pl : layout) {
    const int stages = static_cast<int>(pl.stages.size());
    if (stages < 1 || stages > layers)
      return std::nullopt;
    split_request req;
    req.memory_fraction = o.memory_fraction;
    req.respect_memory = o.respect_memory;
    for (int s = 0; s < stages; ++s) {
      const auto& devs = pl.stages[size_t(s)];
      if (devs.empty() || static_cast<int>(devs.size()) > b)
        return std::nullopt;
      req.devices.push_back(devs);
      req.samples.push_back(stage_samples(costs, devs, b, o.proportional_samples));
      int flight = micro_batches_held(o.schedule, s, stages, total_micro / pipelines);
      req.in_flight.push_back(o.max_in_flight > 0 ? std::min(flight, o.max_in_flight) : flight);
    }
    std::vector<int> bounds = !o.balance_layers ? uniform_bounds(layers, stages)
                              : memo            ? memo->balance(costs, req).bounds
                                                : balance_layers(costs, req).bounds;
    pipeline_plan pp;
    pp.schedule = o.schedule;
    for (int s = 0; s < stages; ++s) {
      stage_plan st;
      st.devices = req.devices[size_t(s)];
      st.samples = req.samples[size_t(s)];
      st.first_layer = bounds[size_t(s)];
      st.last_layer = bounds[size_t(s) + 1];
      pp.stages.push_back(std::move(st));
    }
    p.pipelines.push_back(std::move(pp));
  }
  return with_encodings(costs, std::move(p), global_batch, o);
}

plan with_encodings(const cost_cache& costs, plan p, int global_batch, const build_options& o) {
  const cluster& c = costs.cl();
  const int pipelines = static_cast<int>(p.pipelines.size());
  const int total_micro = global_batch / p.micro_batch_size;
  for (auto& pp : p.pipelines)
    for (size_t s = 0; s < pp.stages.size(); ++s) {
      auto& st = pp.stages[s];
      st.send_compression = compression::none;
      if (s + 1 < pp.stages.size()) {
        const device& here = c.devices[size_t(st.devices.front())];
        const device& next = c.devices[size_t(pp.stages[s + 1].devices.front())];
        st.send_compression = here.region != next.region ? o.cross_region
                              : here.node != next.node   ? o.inter_node
                                                         : compression::none;
      }
    }

  // Asymmetric micro-batch counts: a pipeline gets work in proportion to the rate its
  // bottleneck (slowest stage or slowest transfer) lets it run at.
  std::vector<double> rate(size_t(pipelines), 1.0);
  if (o.proportional_micro && pipelines > 1)
    for (int pi = 0; pi < pipelines; ++pi) {
      double worst = 0;
      for (const auto& sc : pipeline_costs(costs, p, pi, o.links))
        worst = std::max({worst, sc.f + sc.b + sc.w, sc.comm_to_next});
      rate[size_t(pi)] = worst > 0 ? 1.0 / worst : 1.0;
    }
  std::vector<int> m = split_proportional(total_micro, rate, 1);
  for (int pi = 0; pi < pipelines; ++pi)
    p.pipelines[size_t(pi)].micro_batches = m[size_t(pi)];
  return p;
}

std::vector<int> thin(const std::vector<int>& values, size_t keep) {
  if (values.size() <= keep)
    return values;
  std::vector<int> out;
  for (size_t i = 0; i < keep; ++i) {
    int v = values[i * (values.size() - 1) / (keep - 1)];
    if (out.empty() || out.back() != v)
      out.push_back(v);
  }
  return out;
}

} // namespace deepcee::runtime
