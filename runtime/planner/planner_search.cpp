#include "runtime/planner/planner_search.hpp"
#include "runtime/planner/stage_order.hpp"

#include "runtime/base/units.hpp"
#include "runtime/schedule/op_readiness.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace deepcee::runtime {
namespace {

using stage_list = std::vector<std::vector<int>>;

/// Level 1: a set of devices also tries dropping its slowest compute groups one by one
/// when it has at most 12 of them, and a set within one network group its slowest nodes
/// when it has at most 16 nodes. Each drop adds a set that every later level multiplies,
/// so a set of many parts, where one slow part weighs little anyway, keeps them all.
constexpr size_t max_compute_groups_to_drop = 12;
constexpr size_t max_nodes_to_drop = 16;

/// Level 1 also takes the network groups of the dendrogram's finer cuts, this many merges
/// before the grouping's: a link made faster can move the cut past a merge, and the group
/// that merge made must not take away the plans that used the groups before it.
constexpr int finer_cuts = 2;

/// Level 2: chain orders tried per device set, each from another first group.
constexpr size_t max_chain_starts = 4;

/// Level 3: pipeline counts tried for slices of the network groups. Small counts one by
/// one, then about 1.5x apart (the batch sizes users pick are products of 2 and 3, so
/// these tend to divide them), up to 128 pipelines.
constexpr int pipeline_counts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};

/// Level 4: stages of one device each only for slices of at most 8 devices. A deeper
/// pipeline needs as many micro-batches to fill, and the slices' nodes or compute groups
/// already give shallower cuts of a large slice. A model that needs more than half as many
/// devices to hold its state and one sample's activations raises the limit to twice that
/// many (device_stage_limit): only deeper pipelines can hold it, and twice leaves room for
/// layers that do not split evenly and for more micro-batches in flight.
constexpr size_t max_slice_for_device_stages = 8;

/// Kind-interleaved shapes: each pipeline cut into at most 4 contiguous stages, like
/// Metis's device groups.
constexpr int max_interleaved_stages = 4;

/// Level 5: every divisor of the batch that suits the layout is a micro-batch size. A size
/// whose plans would all be pruned by their own bound is skipped before any is built
/// (layout_bound, a bound that holds for every split, schedule and compression). On
/// Every encoding is tried on every hop between nodes, also on the largest clusters; the
/// layer split, which does not depend on it, is computed once for all of them.

/// Level 6 when no fixed schedule fits memory: the layers are split for at most this many
/// micro-batches in flight per stage. One always fits where any split does; more let the
/// greedy schedule overlap more; beyond 4 the fixed schedules' own bounds are close.
constexpr int greedy_in_flight_caps[] = {1, 2, 4};

/// The pool of priced candidates is ranked and cut back to 4 * keep whenever it grows past
/// 8 * keep + 64, so memory stays bounded however many shapes there are and the sort runs
/// once per many candidates. Any cut at or above `keep` ranks the same best `keep` (the
/// sort is stable), so these only trade memory for sorting time.
constexpr size_t pool_limit_per_kept = 8;
constexpr size_t pool_limit_slack = 64;
constexpr size_t pool_cut_per_kept = 4;

struct context {
  const cost_cache& costs;
  const grouping& groups;
  int batch;
  const planner_options& options;
  std::vector<double> speed;   ///< per device, samples/s at one sample
  std::vector<int> net_of;     ///< device -> network group
  std::vector<int> compute_of; ///< device -> compute group, numbered fastest first per group
  std::vector<int> node_of;    ///< device -> node
  /// node -> its place when the cluster's nodes are ordered by their devices' mean speed,
  /// fastest first (ties by index): one order for every pipeline's stages (stages_of).
  std::vector<int> node_rank;
  std::vector<bool> usable;
  size_t device_stage_limit = max_slice_for_device_stages; ///< largest slice cut by device
};

double sum_speed(const context& x, const std::vector<int>& devices) {
  double s = 0;
  for (int d : devices)
    s += x.speed[size_t(d)];
  return s;
}

/// Devices sorted fastest first, then by their nodes' rank, then by id (deterministic). Equal
/// devices of several nodes keep the nodes' order in every slice, so the replicas of a stage
/// sit on the same nodes in every pipeline whichever device of a node is faster.
void by_speed(const context& x, std::vector<int>& devices) {
  std::stable_sort(devices.begin(), devices.end(), [&](int a, int b) {
    if (x.speed[size_t(a)] != x.speed[size_t(b)])
      return x.speed[size_t(a)] > x.speed[size_t(b)];
    const int na = x.node_rank[size_t(x.node_of[size_t(a)])];
    const int nb = x.node_rank[size_t(x.node_of[size_t(b)])];
    return na != nb ? na < nb : a < b;
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

int root_of(std::vector<int>& parent, int n) {
  while (parent[size_t(n)] != n)
    n = parent[size_t(n)] = parent[size_t(parent[size_t(n)])];
  return n;
}

/// The usable devices of each group of the dendrogram's finer cuts (finer_cuts) that is not a
/// whole network group, alone and with every other network group.
std::vector<std::vector<int>> finer_cut_sets(const context& x,
                                             const std::vector<std::vector<int>>& per_group) {
  const size_t nodes = x.costs.cl().nodes.size();
  std::vector<std::vector<int>> out;
  for (int cut = std::max(0, x.groups.merges_applied - finer_cuts); cut < x.groups.merges_applied;
       ++cut) {
    std::vector<int> parent(nodes);
    std::iota(parent.begin(), parent.end(), 0);
    for (int k = 0; k < cut; ++k) {
      const auto& m = x.groups.merges[size_t(k)];
      const int a = root_of(parent, m.left), b = root_of(parent, m.right);
      parent[size_t(std::max(a, b))] = std::min(a, b);
    }
    std::map<int, std::vector<int>> finer;
    for (size_t d = 0; d < x.usable.size(); ++d)
      if (x.usable[d])
        finer[root_of(parent, x.node_of[d])].push_back(static_cast<int>(d));
    for (auto& [root, devices] : finer) {
      const int g = x.net_of[size_t(devices.front())];
      if (devices.size() == per_group[size_t(g)].size())
        continue;
      out.push_back(devices);
      for (size_t other = 0; other < per_group.size(); ++other)
        if (static_cast<int>(other) != g)
          devices.insert(devices.end(), per_group[other].begin(), per_group[other].end());
      out.push_back(devices);
    }
  }
  return out;
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
    if (parts.size() > 1 && parts.size() <= max_compute_groups_to_drop) {
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
    if (groups_in.size() == 1 && nodes.size() > 1 && nodes.size() <= max_nodes_to_drop) {
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
  for (auto& set : finer_cut_sets(x, per_group))
    add(std::move(set));
  return out;
}

/// The chain that starts at groups[first], always on to the nearest group left.
std::vector<std::vector<int>> chain_from(const context& x, std::vector<std::vector<int>> left,
                                         size_t first) {
  const cluster& c = x.costs.cl();
  std::vector<std::vector<int>> out{left[first]};
  left.erase(left.begin() + long(first));
  const double bytes = double(x.costs.profiles().model().transfer_bytes(1, compression::none));
  while (!left.empty()) {
    size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < left.size(); ++i) {
      const int a = out.back().front(), b = left[i].front();
      const double cost = std::max(c.link_between(a, b).transfer_time(bytes),
                                   c.link_between(b, a).transfer_time(bytes));
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

/// Level 2: the network groups of a set in chain orders, each following the network's
/// paths: from a first group, always the group nearest (cheapest boundary transfer, the
/// slower direction) to the last one. The first group is the fastest, then each other one
/// by speed (up to max_chain_starts in all): a line of regions is followed from either end,
/// and a slow or memory-rich group may hold the first layers.
std::vector<std::vector<std::vector<int>>> chains(const context& x,
                                                  const std::vector<int>& devices) {
  std::vector<std::vector<int>> groups;
  for (auto& [g, v] : split_by(devices, x.net_of))
    groups.push_back(v);
  std::vector<size_t> starts(groups.size());
  std::iota(starts.begin(), starts.end(), 0);
  std::stable_sort(starts.begin(), starts.end(), [&](size_t a, size_t b) {
    return sum_speed(x, groups[a]) > sum_speed(x, groups[b]);
  });
  std::vector<std::vector<std::vector<int>>> out;
  for (size_t k = 0; k < starts.size() && k < max_chain_starts; ++k) {
    auto c = chain_from(x, groups, starts[k]);
    if (std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(std::move(c));
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

/// Level 3, across nodes: P slices that each take an equal share of every node's devices
/// (each node's devices, fastest first, dealt round robin), so that a pipeline cut by
/// nodes has one stage on every node and a stage's replicas in the other pipelines sit on
/// the same node: the gradient all-reduce then stays inside the nodes and only the
/// pipelines' transfers cross between them. Empty unless the group has several nodes and
/// each has at least P devices.
stage_list slices_across_nodes(const context& x, const std::vector<int>& group, int pipelines) {
  stage_list nodes = parts_by(x, group, x.node_of);
  if (nodes.size() < 2)
    return {};
  stage_list out(static_cast<size_t>(pipelines));
  for (auto& node : nodes) {
    if (static_cast<int>(node.size()) < pipelines)
      return {};
    by_speed(x, node);
    for (size_t k = 0; k < node.size(); ++k)
      out[k % size_t(pipelines)].push_back(node[k]);
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
  case stage_mode::nodes: {
    // In the nodes' cluster-wide order, not by the slice's share of each: every pipeline
    // then passes the nodes in one order, and its stage k sits where the others' stage k do.
    stage_list out;
    for (auto& [n, v] : split_by(slice, x.node_of))
      out.push_back(v);
    std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      return x.node_rank[size_t(x.node_of[size_t(a.front())])] <
             x.node_rank[size_t(x.node_of[size_t(b.front())])];
    });
    return out;
  }
  case stage_mode::compute: {
    // Compute groups are numbered fastest first: the same order in every pipeline.
    stage_list out;
    for (auto& [g, v] : split_by(slice, x.compute_of))
      out.push_back(v);
    return out;
  }
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

/// Which kinds of hop between stages a layout has (by the stages' first devices).
struct hop_kinds {
  bool cross_region = false;
  bool inter_node = false; ///< between nodes of one region
};

hop_kinds hops_of(const cluster& c, const std::vector<pipeline_layout>& layout) {
  hop_kinds h;
  for (const auto& pl : layout)
    for (size_t s = 0; s + 1 < pl.stages.size(); ++s) {
      const device& a = c.devices[size_t(pl.stages[s].front())];
      const device& b = c.devices[size_t(pl.stages[s + 1].front())];
      h.cross_region = h.cross_region || a.region != b.region;
      h.inter_node = h.inter_node || (a.region == b.region && a.node != b.node);
    }
  return h;
}

/// The encodings a layout's plans try, as (across regions, between nodes of a region):
/// none; each encoding across regions alone (the WAN is the slowest hop); each on every
/// hop between nodes. Hops inside a node stay fp32: their links are fast enough that the
/// bytes saved do not pay for the precision lost.
std::vector<std::pair<compression, compression>> encodings(const planner_options& options,
                                                           const hop_kinds& hops) {
  std::vector<std::pair<compression, compression>> out{{compression::none, compression::none}};
  for (compression comp : options.compressions) {
    if (comp == compression::none)
      continue;
    if (hops.cross_region)
      out.emplace_back(comp, compression::none);
    if (hops.inter_node)
      out.emplace_back(hops.cross_region ? comp : compression::none, comp);
  }
  return out;
}

/// The step time beyond which a plan cannot win (search_prune_factor times the best so far),
/// or infinity when the search prunes nothing (planner_options::prune).
double prune_limit(const context& x, double best_step) {
  return x.options.prune ? search_prune_factor * best_step
                         : std::numeric_limits<double>::infinity();
}

/// A lower bound on plan_bound::limit_s() of every plan of `layout` at micro-batch size `b`,
/// whatever its layer split, schedule, compression and micro-batch counts; 0 when the layout cannot
/// take `b`. A stage takes at least its first slowest device's F + B + W of its layers per
/// micro-batch (stage_samples gives that device's rows, as build_plan does), so some stage
/// of pipeline p takes at least L_p = (sum over layers of the cheapest stage's time for it)
/// / stages, and micro-batches m_p summing to batch / b give max_p m_p L_p >= (batch / b) /
/// sum_p 1 / L_p. Compression only adds to F and B; a pipeline's makespan_bound is at least
/// m_p times its slowest stage's F + B + W, and the all-reduce and optimizer only add to it.
double layout_bound(const context& x, const std::vector<pipeline_layout>& layout, int b) {
  const int layers = x.costs.layer_count();
  double rate = 0; // sum over pipelines of 1 / L_p
  for (const auto& pl : layout) {
    std::vector<double> cheapest(static_cast<size_t>(layers),
                                 std::numeric_limits<double>::infinity());
    for (const auto& devs : pl.stages) {
      if (devs.empty() || static_cast<int>(devs.size()) > b)
        return 0;
      const std::vector<int> samples = stage_samples(x.costs, devs, b, true);
      size_t slowest = 0;
      double slowest_s = -1;
      for (size_t k = 0; k < devs.size(); ++k) {
        const double t = x.costs.range_time(devs[k], 0, layers, samples[k]);
        if (t > slowest_s) {
          slowest_s = t;
          slowest = k;
        }
      }
      const auto& pre = x.costs.sums(devs[slowest], samples[slowest]);
      for (size_t l = 0; l < size_t(layers); ++l)
        cheapest[l] = std::min(cheapest[l], (pre.f[l + 1] - pre.f[l]) + (pre.b[l + 1] - pre.b[l]) +
                                                (pre.w[l + 1] - pre.w[l]));
    }
    double sum = 0;
    for (double t : cheapest)
      sum += t;
    const double per_stage = sum / double(pl.stages.size());
    if (!(per_stage > 0))
      return 0;
    rate += 1.0 / per_stage;
  }
  // Slack for the rounding of sums taken in another order than the plan's estimate.
  constexpr double rounding = 1e-9;
  return rate > 0 ? (1 - rounding) * double(x.batch / b) / rate : 0;
}

bool better(const plan_estimate& a, const plan_estimate& b) {
  if (a.fits != b.fits)
    return a.fits;
  return a.step_s < b.step_s;
}

/// Level 0: each device's network group, compute group, node and speed.
context index_devices(const cost_cache& costs, const grouping& groups, int batch,
                      const planner_options& options) {
  const cluster& c = costs.cl();
  context x{costs, groups, batch, options, {}, {}, {}, {}, {}, {}};
  x.speed.resize(c.devices.size());
  x.net_of.assign(c.devices.size(), 0);
  x.node_of.resize(c.devices.size());
  for (const auto& d : c.devices) {
    x.node_of[size_t(d.id)] = d.node;
    x.speed[size_t(d.id)] = costs.speed(d.id, 1);
  }
  std::vector<double> node_speed(c.nodes.size(), 0.0);
  std::vector<int> nodes(c.nodes.size());
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    nodes[n] = static_cast<int>(n);
    for (int d : c.nodes[n].devices)
      node_speed[n] += x.speed[size_t(d)] / double(c.nodes[n].devices.size());
  }
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](int a, int b) { return node_speed[size_t(a)] > node_speed[size_t(b)]; });
  x.node_rank.assign(c.nodes.size(), 0);
  for (size_t k = 0; k < nodes.size(); ++k)
    x.node_rank[size_t(nodes[k])] = static_cast<int>(k);
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
  return x;
}

/// The fewest devices (largest memory first) that can hold the model's state and one
/// sample's activations between them: no plan over fewer devices fits.
size_t devices_to_hold_model(const context& x) {
  const cluster& c = x.costs.cl();
  const int layers = x.costs.layer_count();
  double need = x.costs.range_state(0, layers) + x.costs.range_activation(0, 0, layers, 1);
  std::vector<double> memory;
  for (const auto& d : c.devices)
    memory.push_back(x.options.memory_fraction * d.memory_bytes);
  std::sort(memory.begin(), memory.end(), std::greater<>());
  size_t n = 0;
  for (; n < memory.size() && need > 0; ++n)
    need -= memory[n];
  return n;
}

/// Marks unusable, and reports, each device that cannot hold the smallest layer with one
/// sample: it can serve no stage.
std::vector<excluded_device> exclude_too_small(context& x) {
  const cluster& c = x.costs.cl();
  const int layers = x.costs.layer_count();
  std::vector<excluded_device> out;
  for (const auto& d : c.devices) {
    double smallest = std::numeric_limits<double>::infinity();
    for (int l = 0; l < layers; ++l)
      smallest = std::min(smallest, x.costs.range_state(l, l + 1) +
                                        x.costs.range_activation(d.id, l, l + 1, 1));
    const double usable = x.options.memory_fraction * d.memory_bytes;
    if (smallest > usable) {
      x.usable[size_t(d.id)] = false;
      const std::string why = " usable cannot hold any one layer with one sample (";
      out.push_back({d.id, format_bytes(usable) + why + format_bytes(smallest) + ")"});
    }
  }
  return out;
}

/// The options of a deepcee plan of micro-batch size `b` and encodings `comp` (across
/// regions, between nodes of a region).
build_options layout_options(const planner_options& options, int b,
                             std::pair<compression, compression> comp) {
  build_options o;
  o.strategy = "deepcee";
  o.model_name = options.model_name;
  o.micro_batch_size = b;
  o.cross_region = comp.first;
  o.inter_node = comp.second;
  o.memory_fraction = options.memory_fraction;
  return o;
}

/// What the search has found so far: the priced candidates, the best step time among those
/// that fit (the prune's reference) and the layouts already tried.
struct search_state {
  const context& x;
  size_t keep;
  search_outcome& out;
  std::vector<search_candidate> pool;
  double best_step = std::numeric_limits<double>::infinity();
  std::set<std::vector<stage_list>> seen_layouts;
  std::chrono::steady_clock::time_point stop_at = std::chrono::steady_clock::time_point::max();
  int max_estimates = std::numeric_limits<int>::max();

  /// Past the search's budget or time and some plan that fits found: price nothing more.
  bool out_of_time() const {
    return best_step < std::numeric_limits<double>::infinity() &&
           (out.estimated >= max_estimates || std::chrono::steady_clock::now() > stop_at);
  }
};

void rank(std::vector<search_candidate>& pool) {
  std::stable_sort(pool.begin(), pool.end(),
                   [](const auto& a, const auto& b) { return better(a.est, b.est); });
}

/// Level 7, activation recomputation: the stages of `p` whose memory binds, where its
/// tightest device cannot keep, next to its state, the activations (until B and until W) of
/// the micro-batches its schedule holds at once (micro_batches_held: greedy as ZB-H1, the
/// most it needs to keep its stages busy). Recomputing elsewhere would only cost time.
std::vector<std::pair<size_t, size_t>> memory_bound_stages(const cost_cache& costs, const plan& p) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t pi = 0; pi < p.pipelines.size(); ++pi) {
    const auto& pp = p.pipelines[pi];
    const int stages = static_cast<int>(pp.stages.size());
    const auto sc = pipeline_costs(costs, p, static_cast<int>(pi), link_model::real);
    for (int st = 0; st < stages; ++st) {
      const int held = micro_batches_held(pp.schedule, st, stages, pp.micro_batches);
      const auto& c = sc[size_t(st)];
      if (c.memory_limit < held * (c.activation_bytes + c.weight_grad_bytes))
        out.emplace_back(pi, size_t(st));
    }
  }
  return out;
}

/// Stages whose recomputation a plan that fits only with it may try to give back one by
/// one (each an estimate): deeper plans keep it where memory bound.
constexpr size_t max_recompute_refinements = 16;

/// Whether every device of `q`, a plan with fixed schedules, holds its state, its peak
/// of activations and the activations it rebuilds. A fixed schedule's peak follows from its
/// op order alone (time_schedule counts the micro-batches held after each op). The
/// estimate prices each device at the stage's peak scaled by its share, at least this, so
/// a device that fails here fails there too.
bool fixed_peaks_fit(const context& x, const plan& q) {
  const cluster& c = x.costs.cl();
  for (const auto& pp : q.pipelines) {
    const int stages = static_cast<int>(pp.stages.size());
    const pipeline_schedule sched = make_schedule(pp.schedule, stages, pp.micro_batches);
    for (int st = 0; st < stages; ++st) {
      std::set<std::pair<int, int>> states; // (held until B, held until W) after each op
      in_flight held;
      for (const auto& op : sched.stages[size_t(st)]) {
        held.count(op.kind);
        states.emplace(held.forward_held, held.backward_held);
      }
      const stage_plan& sp = pp.stages[size_t(st)];
      const double state = x.costs.range_state(sp.first_layer, sp.last_layer);
      for (size_t k = 0; k < sp.devices.size(); ++k) {
        const stage_figures fig = x.costs.stage(sp.devices[k], sp.first_layer, sp.last_layer,
                                                sp.samples[k], sp.recompute);
        double peak = 0;
        for (const auto& [fb, bw] : states)
          peak = std::max(peak, fb * fig.act_until_b + bw * fig.act_until_w);
        const double usable =
            x.options.memory_fraction * c.devices[size_t(sp.devices[k])].memory_bytes;
        if (state + peak + fig.rebuilt_bytes > usable)
          return false;
      }
    }
  }
  return true;
}

/// Gives back, stage by stage, the recomputation of `bound` that `q` (estimated as `e`)
/// fits without and is not slower for: each try is one estimate.
void give_back_recompute(search_state& s, plan& q, plan_estimate& e,
                         const std::vector<std::pair<size_t, size_t>>& bound) {
  const double fraction = s.x.options.memory_fraction;
  for (const auto& [pi, st] : bound) {
    q.pipelines[pi].stages[st].recompute = false;
    plan_estimate without = estimate_plan(s.x.costs, q, link_model::real, fraction);
    ++s.out.estimated;
    if (without.fits && without.step_s <= e.step_s)
      e = without;
    else
      q.pipelines[pi].stages[st].recompute = true;
  }
}

/// `p` with recomputation on the stages where memory binds, when that makes it fit where
/// it did not or run faster (a greedy schedule then holds more micro-batches at once);
/// recomputation that a fitting plan does not need is given back stage by stage where
/// that is not slower. None when nothing binds or it does not pay.
std::optional<std::pair<plan, plan_estimate>> recompute_variant(search_state& s, const plan& p,
                                                                const plan_estimate& plain) {
  const bool greedy = p.pipelines.front().schedule == schedule_kind::greedy;
  // A fixed schedule that fits gains nothing from recomputing; a greedy one that does not
  // cannot hold one micro-batch somewhere, and a recomputing stage needs as much for one
  // (its input and the rebuilt rest while B runs).
  if (!s.x.options.recompute || plain.fits != greedy)
    return std::nullopt;
  const auto bound = memory_bound_stages(s.x.costs, p);
  if (bound.empty())
    return std::nullopt;
  plan q = p;
  for (const auto& [pi, st] : bound)
    q.pipelines[pi].stages[st].recompute = true;
  // Its own bound (B now costs F more) may already lose to the best plan so far, or, for a
  // plan that fits already, to the plan itself: the variant is kept only when its step is
  // shorter, and its all-reduce, optimizer and WAN queue are the plan's (recomputation
  // changes neither the layers, the state nor the transfers), so a pipeline bound at least
  // the plan's pipeline time (which the estimate adds them to in the same order) cannot win.
  if (s.x.options.prune) {
    const plan_bound qb = bound_plan(s.x.costs, q, link_model::real);
    if (qb.limit_s() > prune_limit(s.x, s.best_step) ||
        (plain.fits && qb.pipeline_s >= plain.pipeline_s))
      return std::nullopt;
  }
  // Greedy admits a micro-batch when the larger of its two sizes fits a stage's memory
  // (admits_forward), the rebuilt activations set aside: where one does not, it cannot run.
  if (greedy)
    for (int pi = 0; pi < static_cast<int>(q.pipelines.size()); ++pi)
      for (const auto& c : pipeline_costs(s.x.costs, q, pi, link_model::real))
        if (!admits_forward(in_flight{}, c))
          return std::nullopt;
  if (!plain.fits && !fixed_peaks_fit(s.x, q))
    return std::nullopt;
  const double fraction = s.x.options.memory_fraction;
  plan_estimate e = estimate_plan(s.x.costs, q, link_model::real, fraction);
  ++s.out.estimated;
  // Neither fits: the one that comes closer (the error names the smallest need found).
  if (e.fits ? !better(e, plain) : plain.fits || !e.shortfall.closer_than(plain.shortfall))
    return std::nullopt;
  if (!plain.fits && e.fits && bound.size() <= max_recompute_refinements)
    give_back_recompute(s, q, e, bound);
  return std::make_pair(std::move(q), e);
}

/// Whether a plan was priced (not skipped by its bound) and, if so, whether it fits memory:
/// as built, and as kept (with recomputation where it paid, recompute_variant). A skipped
/// plan tells nothing about memory.
struct considered {
  bool priced = false;
  bool plain_fits = false;
  bool fits = false;
  plan_estimate est; ///< of the plan kept, when priced
};

/// Prices plan `p` unless its lower bound rules it out (plan_bound::limit_s() beyond
/// prune_limit; the bound of `p` without recomputation, which only adds to B, holds for the
/// variant too), and keeps it or its variant with recomputation where that is better; the
/// kept plan is also the best plan of each network group it uses when it fits and is faster
/// than the last.
considered consider(search_state& s, plan p, const std::vector<int>& used_groups) {
  auto priced = estimate_plan_within(s.x.costs, p, link_model::real, s.x.options.memory_fraction,
                                     prune_limit(s.x, s.best_step));
  if (!priced)
    return {};
  plan_estimate e = *priced;
  ++s.out.estimated;
  const bool plain_fits = e.fits;
  if (auto v = recompute_variant(s, p, e)) {
    p = std::move(v->first);
    e = v->second;
  }
  if (e.fits) {
    for (int g : used_groups) {
      if (e.samples_per_s > s.out.best_rate_with_group[size_t(g)]) {
        s.out.best_rate_with_group[size_t(g)] = e.samples_per_s;
        s.out.best_with_group[size_t(g)] = search_candidate{p, e, used_groups};
      }
    }
    s.best_step = std::min(s.best_step, e.step_s);
  } else if (e.shortfall.closer_than(s.out.closest)) {
    s.out.closest = e.shortfall;
  }
  const bool fits = e.fits;
  s.pool.push_back({std::move(p), e, used_groups});
  if (s.pool.size() > pool_limit_per_kept * s.keep + pool_limit_slack) {
    rank(s.pool);
    s.pool.resize(pool_cut_per_kept * s.keep);
  }
  return {true, plain_fits, fits, e};
}

/// Level 6 when memory is short: a micro-batch size and compression for which no fixed
/// schedule fits memory gets greedy schedules instead, their layers split for at most
/// 1, 2 or 4 micro-batches in flight per stage (greedy_in_flight_caps), each priced. The greedy
/// scheduler keeps each stage within its memory, so it runs as many micro-batches at once
/// as the stage holds: the way a model larger than the devices' memory still trains. A cap
/// whose split equals a smaller cap's (memory did not bind differently) gives the same plans
/// again: they are not priced twice.
void price_greedy_for_memory(search_state& s, const std::vector<pipeline_layout>& layout,
                             build_options o,
                             const std::vector<std::pair<compression, compression>>& comps,
                             const std::vector<int>& used_groups, split_memo& memo) {
  o.schedule = schedule_kind::greedy;
  std::vector<char> live(comps.size(), 1);
  std::vector<std::vector<int>> splits_tried;
  for (int cap : greedy_in_flight_caps) {
    o.max_in_flight = cap;
    // One layer split per cap serves every encoding (with_encodings).
    const auto base = build_plan(s.x.costs, layout, s.x.batch, o, &memo);
    if (!base)
      return;
    // Samples, micro-batch counts and encodings follow from the layout and the split.
    std::vector<int> split;
    for (const auto& pp : base->pipelines)
      for (const auto& st : pp.stages)
        split.push_back(st.last_layer);
    if (std::find(splits_tried.begin(), splits_tried.end(), split) != splits_tried.end())
      continue;
    splits_tried.push_back(std::move(split));
    for (size_t k = 0; k < comps.size(); ++k) {
      if (!live[k])
        continue;
      build_options ok = o;
      ok.cross_region = comps[k].first;
      ok.inter_node = comps[k].second;
      // The split for one micro-batch in flight is the easiest to fit: when it does not, a
      // split for more cannot either. A plan skipped by its bound says nothing about that.
      const considered c =
          consider(s, with_encodings(s.x.costs, *base, s.x.batch, ok), used_groups);
      if (c.priced && !c.fits && cap == greedy_in_flight_caps[0])
        live[k] = 0;
    }
  }
}

/// Levels 5 and 6 for one layout: plans for each micro-batch size, schedule and (for hops
/// that cross regions) compression. Greedy is left to the planner, which tries it on the
/// simulator's shortlist (it needs the real stage costs and is the slowest to build),
/// except where no fixed schedule fits memory (price_greedy_for_memory).
void price_layout(search_state& s, const std::vector<pipeline_layout>& layout, size_t widest,
                  int pipes, const std::vector<int>& used_groups) {
  const cluster& c = s.x.costs.cl();
  const planner_options& options = s.x.options;
  const int batch = s.x.batch;
  hop_kinds hops = hops_of(c, layout);
  const auto comps = encodings(options, hops);
  const bool greedy = std::find(options.schedules.begin(), options.schedules.end(),
                                schedule_kind::greedy) != options.schedules.end();
  split_memo memo; // this layout's splits, asked for again by schedules, sizes and caps
  for (int b : divisors_between(batch, static_cast<int>(widest), batch / pipes)) {
    if (s.out_of_time())
      return;
    // Every plan of this size would be pruned by its own bound (consider): skip building.
    if (layout_bound(s.x, layout, b) > prune_limit(s.x, s.best_step))
      continue;
    std::vector<char> fitted(comps.size(), 0);
    bool built = false;
    for (schedule_kind kind : options.schedules) {
      if (kind == schedule_kind::greedy)
        continue;
      build_options o = layout_options(options, b, comps[0]);
      o.schedule = kind;
      // The layer split does not depend on the encodings: build once, re-encode the rest.
      const auto base = build_plan(s.x.costs, layout, batch, o, &memo);
      if (!base)
        continue;
      built = true;
      for (size_t k = 0; k < comps.size(); ++k) {
        plan p =
            k == 0 ? *base
                   : with_encodings(s.x.costs, *base, batch, layout_options(options, b, comps[k]));
        // An encoding counts as fitted only where a priced plan fits without recomputation.
        // Greedy is still tried for the others: where only recomputation made a plan fit,
        // and where every fixed plan was skipped by its bound. A greedy split holds fewer
        // micro-batches in flight, so it may be faster, and it has its own bound.
        const considered c = consider(s, std::move(p), used_groups);
        fitted[k] = (c.priced && c.plain_fits) || fitted[k];
      }
    }
    std::vector<std::pair<compression, compression>> unfit;
    for (size_t k = 0; k < comps.size(); ++k)
      if (!fitted[k])
        unfit.push_back(comps[k]);
    if (greedy && built && !unfit.empty())
      price_greedy_for_memory(s, layout, layout_options(options, b, comps[0]), unfit, used_groups,
                              memo);
  }
}

/// Prices `layout` unless an identical one was tried before (from another use set or
/// stage mode). The widest stage bounds the micro-batch from below: each of its devices
/// takes at least one sample.
void try_layout(search_state& s, const std::vector<pipeline_layout>& layout,
                const std::vector<int>& used_groups) {
  std::vector<stage_list> key;
  size_t widest = 0;
  for (const auto& pl : layout) {
    for (const auto& st : pl.stages)
      widest = std::max(widest, st.size());
    key.push_back(pl.stages);
  }
  if (!s.out_of_time() && s.seen_layouts.insert(key).second)
    price_layout(s, layout, widest, static_cast<int>(layout.size()), used_groups);
}

/// Level 4 for P pipelines: pipeline `pi` takes slice `pi` of each group of the chain, cut
/// into stages by `mode`. None when a slice is too large for one-device stages or a
/// pipeline has more stages than the model has layers.
std::optional<std::vector<pipeline_layout>>
sliced_layout(const context& x, const std::vector<stage_list>& group_slices, int pipes,
              stage_mode mode) {
  std::vector<pipeline_layout> layout(static_cast<size_t>(pipes));
  for (int pi = 0; pi < pipes; ++pi) {
    auto& stages = layout[size_t(pi)].stages;
    for (const auto& gs : group_slices) {
      const auto& slice = gs[size_t(pi)];
      if (mode == stage_mode::devices && slice.size() > x.device_stage_limit)
        return std::nullopt;
      for (auto& st : stages_of(x, slice, mode))
        stages.push_back(std::move(st));
    }
    if (static_cast<int>(stages.size()) > x.costs.layer_count())
      return std::nullopt;
  }
  return layout;
}

/// Levels 3 and 4 over one use set whose network groups are in chain order: each group cut
/// into P slices of equal speed, and the slices into stages each way.
void search_sliced(search_state& s, const std::vector<std::vector<int>>& groups_chain,
                   size_t use_size, const std::vector<int>& used_groups) {
  size_t smallest_group = use_size;
  for (const auto& g : groups_chain)
    smallest_group = std::min(smallest_group, g.size());
  for (int pipes : pipeline_counts) {
    if (pipes > static_cast<int>(smallest_group) || pipes > s.x.batch)
      break;
    std::vector<stage_list> group_slices;
    for (const auto& g : groups_chain)
      group_slices.push_back(slices(s.x, g, pipes));
    for (stage_mode mode :
         {stage_mode::whole, stage_mode::nodes, stage_mode::compute, stage_mode::devices})
      if (auto layout = sliced_layout(s.x, group_slices, pipes, mode))
        try_layout(s, *layout, used_groups);
    // Pipelines across the nodes, one stage per node (slices_across_nodes); a group of one
    // node keeps its usual slices.
    std::vector<stage_list> across;
    for (size_t k = 0; k < groups_chain.size(); ++k) {
      auto a = slices_across_nodes(s.x, groups_chain[k], pipes);
      across.push_back(a.empty() ? group_slices[k] : std::move(a));
    }
    if (across != group_slices)
      if (auto layout = sliced_layout(s.x, across, pipes, stage_mode::nodes))
        try_layout(s, *layout, used_groups);
  }
}

/// Kind-interleaved shapes (Metis's device groups, here priced on the real links and with
/// every schedule and compression): the use set's devices sorted by speed and dealt to a
/// power of two of pipelines, each pipeline cut into a few contiguous stages.
void search_interleaved(search_state& s, const std::vector<int>& use,
                        const std::vector<int>& used_groups) {
  std::vector<int> sorted = use;
  by_speed(s.x, sorted);
  const int layers = s.x.costs.layer_count();
  for (int pipes = 1; pipes <= static_cast<int>(sorted.size()) && pipes <= s.x.batch; pipes *= 2) {
    stage_list lists(static_cast<size_t>(pipes));
    for (size_t i = 0; i < sorted.size(); ++i)
      lists[i % size_t(pipes)].push_back(sorted[i]);
    const int shortest = static_cast<int>(lists.back().size());
    for (int stages = 1; stages <= std::min({shortest, layers, max_interleaved_stages}); ++stages) {
      std::vector<pipeline_layout> layout(static_cast<size_t>(pipes));
      for (int pi = 0; pi < pipes; ++pi) {
        const auto& list = lists[size_t(pi)];
        std::vector<int> cut = uniform_bounds(static_cast<int>(list.size()), stages);
        for (int st = 0; st < stages; ++st)
          layout[size_t(pi)].stages.emplace_back(list.begin() + cut[size_t(st)],
                                                 list.begin() + cut[size_t(st) + 1]);
      }
      try_layout(s, layout, used_groups);
    }
  }
}

/// The order search: from each of this many best distinct layouts that fit (fixed schedules),
/// at most this many climbs, and at most this many plans priced in all (on top of the
/// enumeration's budget, so the orders are searched however that ended).
constexpr size_t order_starts = 4;
constexpr int order_climbs = 4;
constexpr int order_estimates = 1500;

/// The best estimate of `layout` at micro-batch size `b` under schedule `kind`, every
/// encoding of its hops tried (each plan considered as the enumeration does); none when no
/// plan of it was priced or fits.
std::optional<plan_estimate> price_order(search_state& s,
                                         const std::vector<pipeline_layout>& layout, int b,
                                         schedule_kind kind, const std::vector<int>& used_groups) {
  const auto comps = encodings(s.x.options, hops_of(s.x.costs.cl(), layout));
  build_options o = layout_options(s.x.options, b, comps[0]);
  o.schedule = kind;
  const auto base = build_plan(s.x.costs, layout, s.x.batch, o);
  if (!base)
    return std::nullopt;
  std::optional<plan_estimate> best;
  for (size_t k = 0; k < comps.size() && !s.out_of_time(); ++k) {
    plan p = k == 0 ? *base
                    : with_encodings(s.x.costs, *base, s.x.batch,
                                     layout_options(s.x.options, b, comps[k]));
    const considered c = consider(s, std::move(p), used_groups);
    if (c.priced && c.fits && (!best || better(c.est, *best)))
      best = c.est;
  }
  return best;
}

/// Climbs from `start` over stage orders (stage_orders_moved) in closed form: each step prices
/// every order one block move away, at the start's micro-batch size and schedule, and goes on
/// from the best while it beats the last.
void climb_orders(search_state& s, const search_candidate& start) {
  std::vector<pipeline_layout> layout = layout_of(start.p);
  plan_estimate now = start.est;
  const schedule_kind kind = start.p.pipelines.front().schedule;
  for (int climb = 0; climb < order_climbs && !s.out_of_time(); ++climb) {
    std::optional<std::pair<std::vector<pipeline_layout>, plan_estimate>> next;
    for (auto& moved : stage_orders_moved(s.x.costs.cl(), layout)) {
      std::vector<stage_list> key;
      for (const auto& pl : moved)
        key.push_back(pl.stages);
      if (s.out_of_time() || !s.seen_layouts.insert(key).second)
        continue;
      const auto e = price_order(s, moved, start.p.micro_batch_size, kind, start.net_groups);
      if (e && (!next || better(*e, next->second)))
        next = std::make_pair(std::move(moved), *e);
    }
    if (!next || !better(next->second, now))
      return;
    layout = std::move(next->first);
    now = next->second;
  }
}

/// The order search around the best plans found (climb_orders from each of the order_starts
/// best distinct layouts with a fixed schedule that fit), within its own budget of
/// order_estimates.
void search_orders(search_state& s) {
  rank(s.pool);
  std::vector<search_candidate> starts;
  std::set<std::vector<stage_list>> layouts;
  for (const auto& cand : s.pool) {
    if (starts.size() >= order_starts)
      break;
    std::vector<stage_list> key;
    for (const auto& pl : layout_of(cand.p))
      key.push_back(pl.stages);
    if (cand.est.fits && cand.p.pipelines.front().schedule != schedule_kind::greedy &&
        layouts.insert(key).second)
      starts.push_back(cand);
  }
  const int budget = s.max_estimates;
  if (s.x.options.prune)
    s.max_estimates = s.out.estimated + order_estimates;
  for (const auto& start : starts)
    climb_orders(s, start);
  s.max_estimates = budget;
}

} // namespace

search_outcome search_candidates(const cost_cache& costs, const grouping& groups, int batch,
                                 const planner_options& options, size_t keep,
                                 std::chrono::steady_clock::time_point stop_at) {
  context x = index_devices(costs, groups, batch, options);
  search_outcome out;
  out.best_rate_with_group.assign(groups.network.size(), 0.0);
  out.best_with_group.assign(groups.network.size(), std::nullopt);
  out.too_small = exclude_too_small(x);
  x.device_stage_limit = std::max(max_slice_for_device_stages, 2 * devices_to_hold_model(x));
  search_state s{x, keep, out, {}, std::numeric_limits<double>::infinity(), {}, stop_at};
  const int budget =
      options.estimate_budget != 0 ? options.estimate_budget : planner_estimate_budget;
  if (options.prune && budget > 0)
    s.max_estimates = budget;
  const auto uses = use_sets(x);
  for (size_t i = 0; i < uses.size() && !s.out_of_time(); ++i) {
    const auto& use = uses[i];
    std::vector<int> used_groups;
    for (const auto& groups_chain : chains(x, use)) {
      used_groups.clear();
      for (const auto& g : groups_chain)
        used_groups.push_back(x.net_of[size_t(g.front())]);
      search_sliced(s, groups_chain, use.size(), used_groups);
    }
    std::sort(used_groups.begin(), used_groups.end());
    search_interleaved(s, use, used_groups);
    if (options.progress)
      options.progress(
          {"search", static_cast<int>(i + 1), static_cast<int>(uses.size()), out.estimated, 0});
  }
  search_orders(s);
  rank(s.pool);
  if (s.pool.size() > keep)
    s.pool.resize(keep);
  out.ranked = std::move(s.pool);
  return out;
}

} // namespace deepcee::runtime
