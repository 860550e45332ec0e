#include "runtime/planner_search.hpp"

#include "runtime/units.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace deepcee::runtime {
namespace {

using stage_list = std::vector<std::vector<int>>;

struct context {
  const cost_cache& costs;
  const grouping& groups;
  int batch;
  const planner_options& options;
  std::vector<double> speed;   ///< per device, samples/s at one sample
  std::vector<int> net_of;     ///< device -> network group
  std::vector<int> compute_of; ///< device -> compute group, numbered fastest first per group
  std::vector<int> node_of;    ///< device -> node
  std::vector<bool> usable;
};

double sum_speed(const context& x, const std::vector<int>& devices) {
  double s = 0;
  for (int d : devices)
    s += x.speed[size_t(d)];
  return s;
}

/// Devices sorted fastest first, then by id (deterministic).
void by_speed(const context& x, std::vector<int>& devices) {
  std::stable_sort(devices.begin(), devices.end(), [&](int a, int b) {
    if (x.speed[size_t(a)] != x.speed[size_t(b)])
      return x.speed[size_t(a)] > x.speed[size_t(b)];
    return a < b;
  });
}

std::map<int, std::vector<int>> split_by(const std::vector<int>& devices,
                                         const std::vector<int>& key) {
  std::map<int, std::vector<int>> out;
  for (int d : devices)
    out[key[size_t(d)]].push_back(d);
  return out;
}

/// Parts of `devices` keyed by `key`, ordered fastest part first.
stage_list parts_by(const context& x, const std::vector<int>& devices,
                    const std::vector<int>& key) {
  stage_list parts;
  for (auto& [k, v] : split_by(devices, key))
    parts.push_back(v);
  std::stable_sort(parts.begin(), parts.end(), [&](const auto& a, const auto& b) {
    return sum_speed(x, a) / double(a.size()) > sum_speed(x, b) / double(b.size());
  });
  return parts;
}

/// Which devices take part (level 1).
std::vector<std::vector<int>> use_sets(const context& x) {
  std::vector<std::vector<int>> per_group(x.groups.network.size());
  for (size_t g = 0; g < x.groups.network.size(); ++g)
    for (int d : x.groups.network[g].devices)
      if (x.usable[size_t(d)])
        per_group[g].push_back(d);
  std::vector<int> order;
  for (size_t g = 0; g < per_group.size(); ++g)
    if (!per_group[g].empty())
      order.push_back(static_cast<int>(g));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sum_speed(x, per_group[size_t(a)]) > sum_speed(x, per_group[size_t(b)]);
  });

  std::vector<std::vector<int>> bases;
  std::vector<int> prefix;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& g = per_group[size_t(order[i])];
    prefix.insert(prefix.end(), g.begin(), g.end());
    bases.push_back(prefix);
    if (i > 0)
      bases.push_back(g);
  }
  std::set<std::vector<int>> seen;
  std::vector<std::vector<int>> out;
  auto add = [&](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    if (!v.empty() && seen.insert(v).second)
      out.push_back(std::move(v));
  };
  for (const auto& base : bases) {
    add(base);
    // Without the slowest compute groups: a slow kind in a stage holds the others back.
    stage_list parts = parts_by(x, base, x.compute_of);
    if (parts.size() > 1 && parts.size() <= 12) {
      std::vector<int> keep;
      for (size_t k = 0; k + 1 < parts.size(); ++k) {
        keep.insert(keep.end(), parts[k].begin(), parts[k].end());
        add(keep);
      }
    }
    // One network group of few nodes: its fastest nodes alone (a flat network where
    // every node-to-node hop is slow may be best served by fewer nodes).
    std::set<int> groups_in;
    for (int d : base)
      groups_in.insert(x.net_of[size_t(d)]);
    stage_list nodes = parts_by(x, base, x.node_of);
    if (groups_in.size() == 1 && nodes.size() > 1 && nodes.size() <= 16) {
      std::stable_sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
        return sum_speed(x, a) > sum_speed(x, b);
      });
      std::vector<int> keep;
      for (size_t k = 0; k + 1 < nodes.size(); ++k) {
        keep.insert(keep.end(), nodes[k].begin(), nodes[k].end());
        add(keep);
      }
    }
  }
  return out;
}

/// Level 2: the network groups of a set in chain order: the fastest first, then always
/// the group nearest (cheapest boundary transfer) to the last one.
std::vector<std::vector<int>> chain(const context& x, const std::vector<int>& devices) {
  const cluster& c = x.costs.cl();
  auto groups = split_by(devices, x.net_of);
  std::vector<std::vector<int>> left;
  for (auto& [g, v] : groups)
    left.push_back(v);
  std::vector<std::vector<int>> out;
  size_t first = 0;
  for (size_t i = 1; i < left.size(); ++i)
    if (sum_speed(x, left[i]) > sum_speed(x, left[first]))
      first = i;
  out.push_back(left[first]);
  left.erase(left.begin() + long(first));
  const double bytes = double(x.costs.profiles().model().transfer_bytes(1, compression::none));
  while (!left.empty()) {
    size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < left.size(); ++i) {
      double cost = c.link_between(out.back().front(), left[i].front()).transfer_time(bytes);
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
    }
    out.push_back(left[best]);
    left.erase(left.begin() + long(best));
  }
  return out;
}

/// Level 3: P slices of equal speed (longest processing time first), whole nodes where
/// there are at least P of them. Empty when the group has fewer than P devices.
stage_list slices(const context& x, const std::vector<int>& group, int pipelines) {
  if (static_cast<int>(group.size()) < pipelines)
    return {};
  stage_list items = parts_by(x, group, x.node_of);
  if (static_cast<int>(items.size()) < pipelines) {
    items.clear();
    std::vector<int> sorted = group;
    by_speed(x, sorted);
    for (int d : sorted)
      items.push_back({d});
  }
  std::stable_sort(items.begin(), items.end(),
                   [&](const auto& a, const auto& b) { return sum_speed(x, a) > sum_speed(x, b); });
  stage_list out(static_cast<size_t>(pipelines));
  std::vector<double> load(static_cast<size_t>(pipelines), 0.0);
  for (const auto& item : items) {
    size_t k = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    out[k].insert(out[k].end(), item.begin(), item.end());
    load[k] += sum_speed(x, item);
  }
  for (auto& s : out)
    std::sort(s.begin(), s.end());
  return out;
}

enum class stage_mode { whole, nodes, compute, devices };

/// Level 4: the stages of one slice.
stage_list stages_of(const context& x, const std::vector<int>& slice, stage_mode mode) {
  switch (mode) {
  case stage_mode::whole:
    return {slice};
  case stage_mode::nodes:
    return parts_by(x, slice, x.node_of);
  case stage_mode::compute:
    return parts_by(x, slice, x.compute_of);
  case stage_mode::devices: {
    stage_list out;
    std::vector<int> sorted = slice;
    by_speed(x, sorted);
    for (int d : sorted)
      out.push_back({d});
    return out;
  }
  }
  return {slice};
}

bool crosses_regions(const cluster& c, const std::vector<pipeline_layout>& layout) {
  for (const auto& pl : layout)
    for (size_t s = 0; s + 1 < pl.stages.size(); ++s)
      if (c.devices[size_t(pl.stages[s].front())].region !=
          c.devices[size_t(pl.stages[s + 1].front())].region)
        return true;
  return false;
}

/// Micro-batches times the slowest stage or transfer: no schedule beats it.
double lower_bound(const cost_cache& costs, const plan& p) {
  double lb = 0;
  for (int pi = 0; pi < static_cast<int>(p.pipelines.size()); ++pi) {
    double worst = 0;
    for (const auto& sc : pipeline_costs(costs, p, pi, link_model::real))
      worst = std::max({worst, sc.f + sc.b + sc.w, sc.comm_to_next});
    lb = std::max(lb, worst * p.pipelines[size_t(pi)].micro_batches);
  }
  return lb;
}

bool better(const plan_estimate& a, const plan_estimate& b) {
  if (a.fits != b.fits)
    return a.fits;
  return a.step_s < b.step_s;
}

} // namespace

search_outcome search_candidates(const cost_cache& costs, const grouping& groups, int batch,
                                 const planner_options& options, size_t keep) {
  const cluster& c = costs.cl();
  const int layers = costs.layer_count();
  context x{costs, groups, batch, options, {}, {}, {}, {}, {}};
  search_outcome out;
  out.best_rate_with_group.assign(groups.network.size(), 0.0);
  out.best_with_group.assign(groups.network.size(), std::nullopt);
  x.speed.resize(c.devices.size());
  x.net_of.assign(c.devices.size(), 0);
  x.node_of.resize(c.devices.size());
  for (const auto& d : c.devices)
    x.node_of[size_t(d.id)] = d.node;
  x.compute_of.assign(c.devices.size(), 0);
  x.usable.assign(c.devices.size(), true);
  int compute_id = 0;
  for (size_t g = 0; g < groups.network.size(); ++g)
    for (const auto& cg : groups.network[g].compute) {
      for (int d : cg.devices) {
        x.net_of[size_t(d)] = static_cast<int>(g);
        x.compute_of[size_t(d)] = compute_id;
      }
      ++compute_id;
    }
  // A device that cannot hold the smallest layer with one sample can serve no stage.
  double smallest = std::numeric_limits<double>::infinity();
  for (const auto& d : c.devices) {
    x.speed[size_t(d.id)] = costs.speed(d.id, 1);
    smallest = std::numeric_limits<double>::infinity();
    for (int l = 0; l < layers; ++l)
      smallest = std::min(smallest,
                          costs.range_state(l, l + 1) + costs.range_activation(d.id, l, l + 1, 1));
    if (smallest > options.memory_fraction * d.memory_bytes) {
      x.usable[size_t(d.id)] = false;
      out.too_small.push_back({d.id, format_bytes(options.memory_fraction * d.memory_bytes) +
                                         " usable cannot hold any one layer with one sample (" +
                                         format_bytes(smallest) + ")"});
    }
  }

  std::vector<search_candidate> pool;
  double best_step = std::numeric_limits<double>::infinity();
  auto consider = [&](plan p, const std::vector<int>& used_groups) {
    if (lower_bound(costs, p) > 1.5 * best_step)
      return;
    plan_estimate e = estimate_plan(costs, p, link_model::real, options.memory_fraction);
    ++out.estimated;
    if (e.fits)
      for (int g : used_groups) {
        auto& slot = out.best_with_group[size_t(g)];
        if (e.samples_per_s > out.best_rate_with_group[size_t(g)]) {
          out.best_rate_with_group[size_t(g)] = e.samples_per_s;
          slot = search_candidate{p, e, used_groups};
        }
      }
    if (e.fits)
      best_step = std::min(best_step, e.step_s);
    pool.push_back({std::move(p), e, used_groups});
    if (pool.size() > 8 * keep + 64) {
      std::stable_sort(pool.begin(), pool.end(),
                       [](const auto& a, const auto& b) { return better(a.est, b.est); });
      pool.resize(4 * keep);
    }
  };

  std::set<std::vector<stage_list>> seen_layouts;
  auto try_layout = [&](const std::vector<pipeline_layout>& layout, size_t widest, int pipes,
                        const std::vector<int>& used_groups) {
    const bool cross = crosses_regions(c, layout);
    for (int b : thin(divisors_between(batch, static_cast<int>(widest), batch / pipes),
                      c.devices.size() > 256 ? 4 : 6)) {
      for (schedule_kind kind : options.schedules) {
        // Greedy is tried by the planner on the simulator's shortlist: it needs the
        // real stage costs and is the slowest to build.
        if (kind == schedule_kind::greedy)
          continue;
        for (compression comp : options.compressions) {
          if (!cross && comp != compression::none)
            continue;
          build_options o;
          o.strategy = "deepcee";
          o.model_name = options.model_name;
          o.micro_batch_size = b;
          o.schedule = kind;
          o.cross_region = comp;
          o.memory_fraction = options.memory_fraction;
          if (auto p = build_plan(costs, layout, batch, o))
            consider(std::move(*p), used_groups);
        }
      }
    }
  };
  for (const auto& use : use_sets(x)) {
    auto groups_chain = chain(x, use);
    std::vector<int> used_groups;
    for (const auto& g : groups_chain)
      used_groups.push_back(x.net_of[size_t(g.front())]);
    size_t smallest_group = use.size();
    for (const auto& g : groups_chain)
      smallest_group = std::min(smallest_group, g.size());
    for (int pipes : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128}) {
      if (pipes > static_cast<int>(smallest_group) || pipes > batch)
        break;
      std::vector<stage_list> group_slices;
      for (const auto& g : groups_chain)
        group_slices.push_back(slices(x, g, pipes));
      for (stage_mode mode :
           {stage_mode::whole, stage_mode::nodes, stage_mode::compute, stage_mode::devices}) {
        std::vector<pipeline_layout> layout(static_cast<size_t>(pipes));
        std::vector<stage_list> key;
        bool ok = true;
        size_t widest = 0;
        for (int pi = 0; pi < pipes && ok; ++pi) {
          for (const auto& gs : group_slices) {
            const auto& slice = gs[size_t(pi)];
            if (mode == stage_mode::devices && slice.size() > 8) {
              ok = false;
              break;
            }
            for (auto& st : stages_of(x, slice, mode)) {
              widest = std::max(widest, st.size());
              layout[size_t(pi)].stages.push_back(std::move(st));
            }
          }
          if (static_cast<int>(layout[size_t(pi)].stages.size()) > layers)
            ok = false;
          key.push_back(layout[size_t(pi)].stages);
        }
        if (!ok || !seen_layouts.insert(key).second)
          continue;
        try_layout(layout, widest, pipes, used_groups);
      }
    }
    // Kind-interleaved shapes (Metis's device groups, here priced on the real links and
    // with every schedule and compression): devices sorted by speed and dealt to the
    // pipelines, each pipeline cut into a few contiguous stages.
    std::vector<int> sorted = use;
    by_speed(x, sorted);
    for (int pipes = 1; pipes <= static_cast<int>(sorted.size()) && pipes <= batch; pipes *= 2) {
      stage_list lists(static_cast<size_t>(pipes));
      for (size_t i = 0; i < sorted.size(); ++i)
        lists[i % size_t(pipes)].push_back(sorted[i]);
      int shortest = static_cast<int>(lists.back().size());
      for (int stages = 1; stages <= std::min({shortest, layers, 4}); ++stages) {
        std::vector<pipeline_layout> layout(static_cast<size_t>(pipes));
        std::vector<stage_list> key;
        size_t widest = 0;
        for (int pi = 0; pi < pipes; ++pi) {
          const auto& list = lists[size_t(pi)];
          std::vector<int> cut = uniform_bounds(static_cast<int>(list.size()), stages);
          for (int st = 0; st < stages; ++st) {
            layout[size_t(pi)].stages.emplace_back(list.begin() + cut[size_t(st)],
                                                   list.begin() + cut[size_t(st) + 1]);
            widest = std::max(widest, layout[size_t(pi)].stages.back().size());
          }
          key.push_back(layout[size_t(pi)].stages);
        }
        if (seen_layouts.insert(key).second)
          try_layout(layout, widest, pipes, used_groups);
      }
    }
  }
  std::stable_sort(pool.begin(), pool.end(),
                   [](const auto& a, const auto& b) { return better(a.est, b.est); });
  if (pool.size() > keep)
    pool.resize(keep);
  out.ranked = std::move(pool);
  return out;
}

} // namespace deepcee::runtime
