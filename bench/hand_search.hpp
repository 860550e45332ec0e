#pragma once

// A local search over hand-like plans, every plan scored by deepcee's simulator: what a
// demanding user would try by hand, and then keep tuning. Used by bench_adversarial.
//
// Starts: pipelines that follow the network's paths between regions from each region (the
// next region always the best joined to the last), a region's nodes by memory first or by
// speed first, as one pipeline or several (each taking every node's devices in turn); each
// region its own pipelines; data parallelism over every device and over each region. Each
// with a few micro-batch sizes, 1F1B or greedy, fp32 or int8 on every hop between nodes.
// Moves: a layer bound by one or two layers (in one pipeline or in every pipeline alike);
// micro-batches from one pipeline to another; two neighbouring stages' devices swapped; a
// device to the neighbouring stage or out of the plan; two stages merged or one split;
// a stage's compression; the schedule; recomputation on a stage; the micro-batch size.

#include "runtime/base/splitmix.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/planner_baselines.hpp"
#include "runtime/sim/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace deepcee::bench {

using namespace deepcee::runtime;

struct scored_plan {
  plan p;
  double rate = 0; ///< simulated samples/s; 0: does not fit or does not run
};

class hand_search {
public:
  hand_search(const cluster& c, const profile_table& profiles, int batch, uint64_t seed)
      : c_(c), profiles_(profiles), costs_(c, profiles), batch_(batch), rng_{seed} {}

  /// The simulator's samples/s of `p`, 0 where it is not a valid plan or runs out of memory.
  double score(const plan& p) {
    ++simulated;
    try {
      validate_plan(p, static_cast<int>(c_.devices.size()), "hand");
      const sim_result r = simulate(c_, profiles_.model(), profiles_, p);
      return r.out_of_memory ? 0 : r.samples_per_s;
    } catch (const std::exception&) {
      return 0;
    }
  }

  /// The best `count` starting plans that fit, fastest first.
  std::vector<scored_plan> starts(size_t count) {
    std::vector<scored_plan> all;
    for (const auto& layout : start_layouts())
      for (int b : thin(divisors_between(batch_, widest(layout), batch_ / int(layout.size())), 3))
        for (schedule_kind k : {schedule_kind::one_f_one_b, schedule_kind::greedy})
          for (compression comp : {compression::none, compression::int8}) {
            build_options o;
            o.strategy = "hand";
            o.micro_batch_size = b;
            o.schedule = k;
            o.cross_region = o.inter_node = comp;
            if (auto p = build_plan(costs_, layout, batch_, o))
              if (double r = score(*p); r > 0)
                all.push_back({*p, r});
          }
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.rate > b.rate; });
    if (all.size() > count)
      all.resize(count);
    return all;
  }

  /// Hill climbing from `start`: random moves, each kept when the simulator finds it faster,
  /// until `seconds` pass.
  scored_plan climb(scored_plan best, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
      std::optional<plan> q = neighbour(best.p);
      if (!q)
        continue;
      const double r = score(*q);
      if (r > best.rate * (1 + 1e-9))
        best = {std::move(*q), r};
    }
    return best;
  }

  int simulated = 0;

private:
  const cluster& c_;
  const profile_table& profiles_;
  cost_cache costs_;
  int batch_;
  splitmix_sequence rng_;

  uint64_t next() { return rng_.next(); }
  int below(int n) { return n <= 1 ? 0 : static_cast<int>(next() % uint64_t(n)); }

  static int widest(const std::vector<pipeline_layout>& layout) {
    size_t w = 1;
    for (const auto& pl : layout)
      for (const auto& st : pl.stages)
        w = std::max(w, st.size());
    return static_cast<int>(w);
  }

  double link_Bps(int region_a, int region_b) const {
    int a = -1, b = -1;
    for (const auto& d : c_.devices) {
      a = a < 0 && d.region == region_a ? d.id : a;
      b = b < 0 && d.region == region_b ? d.id : b;
    }
    return std::min(c_.link_between(a, b).bandwidth_Bps, c_.link_between(b, a).bandwidth_Bps);
  }

  /// Regions from `first`, the next always the one best joined to the last.
  std::vector<int> region_path(int first) const {
    std::vector<int> path{first};
    std::set<int> left;
    for (size_t r = 0; r < c_.regions.size(); ++r)
      if (int(r) != first)
        left.insert(int(r));
    while (!left.empty()) {
      int best = *left.begin();
      for (int r : left)
        if (link_Bps(path.back(), r) > link_Bps(path.back(), best))
          best = r;
      path.push_back(best);
      left.erase(best);
    }
    return path;
  }

  /// The nodes of `regions` in order, each region's by memory or by speed first.
  std::vector<std::vector<int>> node_devices(const std::vector<int>& regions, bool by_memory) {
    std::vector<std::vector<int>> out;
    for (int r : regions) {
      std::vector<std::vector<int>> nodes;
      for (const auto& n : c_.nodes)
        if (n.region == r && !n.devices.empty())
          nodes.push_back(n.devices);
      std::stable_sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
        const auto& da = c_.devices[size_t(a.front())];
        const auto& db = c_.devices[size_t(b.front())];
        return by_memory ? da.memory_bytes > db.memory_bytes
                         : costs_.speed(da.id, 1) > costs_.speed(db.id, 1);
      });
      out.insert(out.end(), nodes.begin(), nodes.end());
    }
    return out;
  }

  /// P pipelines whose stages are `groups`, pipeline p taking devices p, p + P, ... of each.
  static std::optional<std::vector<pipeline_layout>>
  group_pipelines(const std::vector<std::vector<int>>& groups, size_t pipes, int layers) {
    if (groups.empty() || int(groups.size()) > layers)
      return std::nullopt;
    std::vector<pipeline_layout> l(pipes);
    for (const auto& g : groups) {
      if (g.size() < pipes)
        return std::nullopt;
      for (size_t p = 0; p < pipes; ++p) {
        std::vector<int> st;
        for (size_t k = p; k < g.size(); k += pipes)
          st.push_back(g[k]);
        l[p].stages.push_back(st);
      }
    }
    return l;
  }

  /// `order` cut into k contiguous parts of nearly equal size.
  static std::vector<std::vector<int>> chunks(const std::vector<int>& order, size_t k) {
    std::vector<std::vector<int>> out(k);
    for (size_t i = 0; i < order.size(); ++i)
      out[i * k / order.size()].push_back(order[i]);
    return out;
  }

  std::vector<std::vector<pipeline_layout>> start_layouts() {
    std::vector<std::vector<pipeline_layout>> out;
    const int layers = costs_.layer_count();
    for (size_t first = 0; first < c_.regions.size(); ++first)
      for (bool by_memory : {true, false}) {
        const auto groups = node_devices(region_path(int(first)), by_memory);
        for (size_t pipes : {1, 2, 4})
          if (auto l = group_pipelines(groups, pipes, layers))
            out.push_back(*l);
        // The devices in path order cut into k contiguous stages, dealt to P pipelines.
        std::vector<int> order;
        for (const auto& g : groups)
          order.insert(order.end(), g.begin(), g.end());
        std::vector<size_t> cuts{order.size()};
        for (size_t k = 2; k < order.size(); k *= 2)
          cuts.push_back(k);
        for (size_t k : cuts)
          for (size_t pipes = 1; pipes * k <= order.size(); pipes *= 2)
            if (auto l = group_pipelines(chunks(order, k), pipes, layers))
              out.push_back(*l);
      }
    std::vector<pipeline_layout> per_region, dp_all;
    for (size_t r = 0; r < c_.regions.size(); ++r) {
      const auto groups = node_devices({int(r)}, true);
      if (auto l = group_pipelines(groups, 1, layers))
        per_region.push_back(l->front());
      std::vector<pipeline_layout> dp;
      for (const auto& g : groups)
        for (int d : g)
          dp.push_back({{{d}}});
      out.push_back(dp);
      dp_all.insert(dp_all.end(), dp.begin(), dp.end());
    }
    out.push_back(per_region);
    out.push_back(dp_all);
    return out;
  }

  /// Samples per device again (proportional to speed) after devices moved; false where a
  /// stage has more devices than samples.
  bool resample(plan& p) {
    for (auto& pp : p.pipelines)
      for (auto& st : pp.stages) {
        if (st.devices.empty() || int(st.devices.size()) > p.micro_batch_size)
          return false;
        st.samples = stage_samples(costs_, st.devices, p.micro_batch_size, true);
      }
    return true;
  }

  std::optional<plan> neighbour(const plan& base) {
    plan p = base;
    auto& pp = p.pipelines[size_t(below(int(p.pipelines.size())))];
    const int n = static_cast<int>(pp.stages.size());
    const int k = below(n);
    switch (below(10)) {
    case 0:
      return move_bound(p, pp, k);
    case 1:
      return move_micro(p);
    case 2: // swap neighbouring stages' devices
      if (k + 1 >= n)
        return std::nullopt;
      std::swap(pp.stages[size_t(k)].devices, pp.stages[size_t(k) + 1].devices);
      return resample(p) ? std::optional(p) : std::nullopt;
    case 3:
      return move_device(p, pp, k);
    case 4:
      return merge_or_split(p, pp, k);
    case 5: {
      const compression comps[] = {compression::none, compression::bf16, compression::int8};
      const compression comp = comps[below(3)];
      for (auto& q : p.pipelines)
        if (size_t(k) < q.stages.size() && (below(2) == 0 || &q == &pp))
          q.stages[size_t(k)].send_compression = comp;
      return p;
    }
    case 6: {
      const schedule_kind kinds[] = {schedule_kind::one_f_one_b, schedule_kind::zb_h1,
                                     schedule_kind::zb_h2, schedule_kind::greedy,
                                     schedule_kind::gpipe};
      const schedule_kind kind = kinds[below(5)];
      for (auto& q : p.pipelines)
        q.schedule = kind;
      return p;
    }
    case 7:
      pp.stages[size_t(k)].recompute = !pp.stages[size_t(k)].recompute;
      return p;
    case 8:
      return change_micro_batch(p);
    default:
      return drop_pipeline(p);
    }
  }

  std::optional<plan> move_bound(plan& p, pipeline_plan& pp, int k) {
    if (k == 0)
      return std::nullopt;
    const int delta = (below(2) ? 1 : -1) * (1 + below(2));
    const int lo = pp.stages[size_t(k) - 1].first_layer, hi = pp.stages[size_t(k)].last_layer;
    const int at = pp.stages[size_t(k)].first_layer, moved = at + delta;
    if (moved <= lo || moved >= hi)
      return std::nullopt;
    const bool all = below(2) == 0;
    for (auto& q : p.pipelines)
      if (&q == &pp ||
          (all && q.stages.size() == pp.stages.size() && q.stages[size_t(k)].first_layer == at &&
           q.stages[size_t(k) - 1].first_layer == lo && q.stages[size_t(k)].last_layer == hi)) {
        q.stages[size_t(k) - 1].last_layer = moved;
        q.stages[size_t(k)].first_layer = moved;
      }
    return p;
  }

  std::optional<plan> move_micro(plan& p) {
    if (p.pipelines.size() < 2)
      return std::nullopt;
    const int a = below(int(p.pipelines.size())), b = below(int(p.pipelines.size()));
    auto& from = p.pipelines[size_t(a)];
    const int count = 1 + below(std::max(1, from.micro_batches / 8));
    if (a == b || from.micro_batches <= count)
      return std::nullopt;
    from.micro_batches -= count;
    p.pipelines[size_t(b)].micro_batches += count;
    return p;
  }

  /// A device to the next or previous stage, or out of the plan.
  std::optional<plan> move_device(plan& p, pipeline_plan& pp, int k) {
    auto& st = pp.stages[size_t(k)];
    if (st.devices.size() < 2)
      return std::nullopt;
    const int d = st.devices[size_t(below(int(st.devices.size())))];
    st.devices.erase(std::find(st.devices.begin(), st.devices.end(), d));
    const int to = k + (below(2) ? 1 : -1);
    if (below(3) > 0 && to >= 0 && to < int(pp.stages.size()))
      pp.stages[size_t(to)].devices.push_back(d);
    return resample(p) ? std::optional(p) : std::nullopt;
  }

  std::optional<plan> merge_or_split(plan& p, pipeline_plan& pp, int k) {
    auto& st = pp.stages[size_t(k)];
    if (below(2) == 0 && k + 1 < int(pp.stages.size())) {
      auto& next = pp.stages[size_t(k) + 1];
      st.devices.insert(st.devices.end(), next.devices.begin(), next.devices.end());
      st.last_layer = next.last_layer;
      st.send_compression = next.send_compression;
      pp.stages.erase(pp.stages.begin() + k + 1);
    } else {
      if (st.devices.size() < 2 || st.last_layer - st.first_layer < 2)
        return std::nullopt;
      stage_plan second = st;
      const size_t half = st.devices.size() / 2;
      second.devices.assign(st.devices.begin() + long(half), st.devices.end());
      st.devices.resize(half);
      st.last_layer = second.first_layer = (st.first_layer + st.last_layer) / 2;
      st.send_compression = compression::none;
      pp.stages.insert(pp.stages.begin() + k + 1, second);
    }
    return resample(p) ? std::optional(p) : std::nullopt;
  }

  /// Another micro-batch size that divides the batch, micro-batches kept in proportion.
  std::optional<plan> change_micro_batch(plan& p) {
    const auto sizes = divisors_between(batch_, 1, batch_);
    const int b = sizes[size_t(below(int(sizes.size())))];
    const int total = batch_ / b;
    if (b == p.micro_batch_size || total < int(p.pipelines.size()))
      return std::nullopt;
    std::vector<double> w;
    for (const auto& q : p.pipelines)
      w.push_back(q.micro_batches);
    const auto m = split_proportional(total, w, 1);
    for (size_t i = 0; i < m.size(); ++i)
      p.pipelines[i].micro_batches = m[i];
    p.micro_batch_size = b;
    return resample(p) ? std::optional(p) : std::nullopt;
  }

  std::optional<plan> drop_pipeline(plan& p) {
    if (p.pipelines.size() < 2)
      return std::nullopt;
    const size_t a = size_t(below(int(p.pipelines.size())));
    const int m = p.pipelines[a].micro_batches;
    p.pipelines.erase(p.pipelines.begin() + long(a));
    p.pipelines[size_t(below(int(p.pipelines.size())))].micro_batches += m;
    return p;
  }
};

} // namespace deepcee::bench
