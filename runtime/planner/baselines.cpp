#include "runtime/planner/baselines.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/plan_estimate.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace deepcee::runtime {
namespace {

[[noreturn]] void cannot_split(const baseline_request& r, const std::string& strategy,
                               const std::string& why) {
  fail_input(r.source, 0,
             strategy + ": global batch " + std::to_string(r.global_batch) + " " + why);
}

/// Nodes in config order as stages (each with only the request's devices), merged in order
/// when there are more nodes than layers.
std::vector<std::vector<int>> node_stages(const cluster& c, const baseline_request& r, int layers) {
  std::vector<bool> allowed(c.devices.size(), r.devices.empty());
  for (int d : r.devices)
    allowed[size_t(d)] = true;
  std::vector<std::vector<int>> by_node;
  for (const auto& n : c.nodes) {
    std::vector<int> mine;
    for (int d : n.devices)
      if (allowed[size_t(d)])
        mine.push_back(d);
    if (!mine.empty())
      by_node.push_back(std::move(mine));
  }
  int stages = std::min<int>(static_cast<int>(by_node.size()), layers);
  std::vector<int> cut = uniform_bounds(static_cast<int>(by_node.size()), stages);
  std::vector<std::vector<int>> out(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s)
    for (int k = cut[size_t(s)]; k < cut[size_t(s) + 1]; ++k)
      out[size_t(s)].insert(out[size_t(s)].end(), by_node[size_t(k)].begin(),
                            by_node[size_t(k)].end());
  return out;
}

/// Marks every device outside the request's subset as excluded, so a restricted baseline
/// says which devices it left out and why.
plan mark_restricted(plan p, const cluster& c, const baseline_request& r) {
  if (r.devices.empty())
    return p;
  std::vector<bool> allowed(c.devices.size(), false);
  for (int d : r.devices)
    allowed[size_t(d)] = true;
  p.excluded.clear();
  for (size_t d = 0; d < c.devices.size(); ++d)
    if (!allowed[d])
      p.excluded.push_back(
          {static_cast<int>(d), "baseline restricted to group " + r.restricted_to});
  return p;
}

plan pipeline_baseline(const cost_cache& costs, const baseline_request& r, schedule_kind kind,
                       const std::string& name) {
  pipeline_layout layout;
  layout.stages = node_stages(costs.cl(), r, costs.layer_count());
  size_t widest = 0;
  for (const auto& s : layout.stages)
    widest = std::max(widest, s.size());
  for (int b : divisors_between(r.global_batch, static_cast<int>(widest), r.global_batch)) {
    build_options o;
    o.strategy = name;
    o.model_name = r.model_name;
    o.micro_batch_size = b;
    o.schedule = kind;
    o.balance_layers = false;
    o.proportional_samples = false;
    o.proportional_micro = false;
    o.memory_fraction = r.memory_fraction;
    if (auto p = build_plan(costs, {layout}, r.global_batch, o))
      return mark_restricted(std::move(*p), costs.cl(), r);
  }
  cannot_split(r, name,
               "has no micro-batch size giving each of " + std::to_string(widest) +
                   " devices of a stage one sample");
}

} // namespace

std::vector<int> baseline_devices(const cluster& c, const baseline_request& r) {
  if (!r.devices.empty())
    return r.devices;
  std::vector<int> v(c.devices.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

plan make_dp_plan(const cost_cache& costs, const baseline_request& r) {
  pipeline_layout layout;
  layout.stages.push_back(baseline_devices(costs.cl(), r));
  const int n = static_cast<int>(layout.stages[0].size());
  std::optional<plan> last;
  // Fewest micro-batches first: gradient accumulation only as far as memory needs it.
  std::vector<int> sizes = divisors_between(r.global_batch, n, r.global_batch);
  std::reverse(sizes.begin(), sizes.end());
  for (int b : sizes) {
    build_options o;
    o.strategy = "dp";
    o.model_name = r.model_name;
    o.micro_batch_size = b;
    o.proportional_samples = false;
    o.memory_fraction = r.memory_fraction;
    auto p = build_plan(costs, {layout}, r.global_batch, o);
    if (!p)
      continue;
    split_request req{layout.stages, {p->pipelines[0].stages[0].samples}, {1}, r.memory_fraction};
    if (fits_memory(costs, req, {0, costs.layer_count()}))
      return mark_restricted(std::move(*p), costs.cl(), r);
    last = p;
  }
  if (last)
    return mark_restricted(std::move(*last), costs.cl(),
                           r); // nothing fits: the simulator reports the out-of-memory
  cannot_split(r, "dp", "cannot give each of " + std::to_string(n) + " devices one sample");
}

plan make_megatron_plan(const cost_cache& costs, const baseline_request& r) {
  return pipeline_baseline(costs, r, schedule_kind::one_f_one_b, "megatron");
}

plan make_gpipe_plan(const cost_cache& costs, const baseline_request& r) {
  return pipeline_baseline(costs, r, schedule_kind::gpipe, "gpipe");
}

plan make_metis_plan(const cost_cache& costs, const baseline_request& r) {
  const cluster& c = costs.cl();
  std::vector<int> order = baseline_devices(c, r);
  std::vector<double> speed(c.devices.size());
  for (int d : order)
    speed[size_t(d)] = costs.speed(d, 1);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return speed[size_t(a)] > speed[size_t(b)]; });
  const int n = static_cast<int>(order.size());
  const int layers = costs.layer_count();

  std::optional<plan> best;
  double best_step = std::numeric_limits<double>::infinity();
  bool best_fits = false;
  for (int pipes = 1; pipes <= n && pipes <= r.global_batch; pipes *= 2) {
    // Deal devices kind by kind, so every pipeline gets the same mix of kinds.
    std::vector<std::vector<int>> lists(static_cast<size_t>(pipes));
    for (int i = 0; i < n; ++i)
      lists[size_t(i % pipes)].push_back(order[size_t(i)]);
    int shortest = static_cast<int>(lists.back().size());
    for (int stages = 1; stages <= std::min(shortest, layers); ++stages) {
      std::vector<pipeline_layout> layout(static_cast<size_t>(pipes));
      size_t widest = 0;
      for (int pi = 0; pi < pipes; ++pi) {
        const auto& list = lists[size_t(pi)];
        std::vector<int> cut = uniform_bounds(static_cast<int>(list.size()), stages);
        for (int s = 0; s < stages; ++s) {
          layout[size_t(pi)].stages.emplace_back(list.begin() + cut[size_t(s)],
                                                 list.begin() + cut[size_t(s) + 1]);
          widest = std::max(widest, layout[size_t(pi)].stages.back().size());
        }
      }
      split_memo memo; // the pipelines dealt alike ask for the same split
      for (int b :
           thin(divisors_between(r.global_batch, static_cast<int>(widest), r.global_batch / pipes),
                5)) {
        build_options o;
        o.strategy = "metis";
        o.model_name = r.model_name;
        o.micro_batch_size = b;
        o.schedule = schedule_kind::one_f_one_b;
        o.links = link_model::uniform;
        o.memory_fraction = r.memory_fraction;
        auto p = build_plan(costs, layout, r.global_batch, o, &memo);
        if (!p)
          continue;
        plan_estimate e = estimate_plan(costs, *p, link_model::uniform, r.memory_fraction);
        bool better = (e.fits && !best_fits) || (e.fits == best_fits && e.step_s < best_step);
        if (better) {
          best = std::move(p);
          best_step = e.step_s;
          best_fits = e.fits;
        }
      }
    }
  }
  if (!best)
    cannot_split(r, "metis", "has no split over " + std::to_string(n) + " devices");
  return mark_restricted(std::move(*best), c, r);
}

} // namespace deepcee::runtime
