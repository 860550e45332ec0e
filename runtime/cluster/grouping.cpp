#include "runtime/cluster/grouping.hpp"
#include "runtime/base/units.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

namespace deepcee::runtime {
namespace {

std::string fixed(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string tflops(double flops) {
  return fixed(flops / 1e12, "%.3g") + " TFLOP/s";
}

/// Costs are kept at picosecond resolution so that links which are equal on paper give
/// equal costs after averaging, and ties fall to the device-id rule, not to rounding.
double quantize(double seconds) {
  return std::round(seconds * 1e12) / 1e12;
}

/// Mean over device pairs of the symmetric transfer time between two nodes.
double node_cost(const cluster& c, const node& a, const node& b, double bytes) {
  double sum = 0;
  for (int da : a.devices)
    for (int db : b.devices)
      sum += 0.5 * (c.link_between(da, db).transfer_time(bytes) +
                    c.link_between(db, da).transfer_time(bytes));
  return quantize(sum / double(a.devices.size() * b.devices.size()));
}

struct dendrogram {
  std::vector<merge_step> merges;
};

/// Average linkage with a nearest-neighbour cache: d(A+B, C) is the size-weighted mean
/// of d(A, C) and d(B, C), and never below min(d(A, C), d(B, C)), so only the rows whose
/// nearest neighbour was A or B need a rescan. Indices are node indices, whose order is
/// that of their smallest device ids; the merged cluster keeps the smaller index.
dendrogram cluster_nodes(std::vector<std::vector<double>> d, std::vector<double> weight) {
  const int n = int(d.size());
  std::vector<bool> active(size_t(n), true);
  std::vector<int> nn(size_t(n), -1);
  auto rescan = [&](int i) {
    nn[size_t(i)] = -1;
    for (int j = 0; j < n; ++j)
      if (j != i && active[size_t(j)] &&
          (nn[size_t(i)] < 0 || d[size_t(i)][size_t(j)] < d[size_t(i)][size_t(nn[size_t(i)])]))
        nn[size_t(i)] = j;
  };
  for (int i = 0; i < n; ++i)
    rescan(i);
  dendrogram out;
  for (int step = 0; step + 1 < n; ++step) {
    int best = -1;
    double best_cost = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (!active[size_t(i)])
        continue;
      int j = nn[size_t(i)];
      double cost = d[size_t(i)][size_t(j)];
      // Ties go to the pair with the smallest (lower, higher) index.
      auto key = std::pair{std::min(i, j), std::max(i, j)};
      if (best < 0 || cost < best_cost ||
          (cost == best_cost &&
           key < std::pair{std::min(best, nn[size_t(best)]), std::max(best, nn[size_t(best)])})) {
        best = i;
        best_cost = cost;
      }
    }
    int a = std::min(best, nn[size_t(best)]);
    int b = std::max(best, nn[size_t(best)]);
    out.merges.push_back({a, b, best_cost});
    double wa = weight[size_t(a)], wb = weight[size_t(b)];
    for (int k = 0; k < n; ++k)
      if (active[size_t(k)] && k != a && k != b) {
        double v =
            quantize((wa * d[size_t(a)][size_t(k)] + wb * d[size_t(b)][size_t(k)]) / (wa + wb));
        d[size_t(a)][size_t(k)] = d[size_t(k)][size_t(a)] = v;
      }
    weight[size_t(a)] = wa + wb;
    active[size_t(b)] = false;
    for (int k = 0; k < n; ++k) {
      if (!active[size_t(k)] || k == a)
        continue;
      if (nn[size_t(k)] == a || nn[size_t(k)] == b)
        rescan(k);
      else if (d[size_t(k)][size_t(a)] < d[size_t(k)][size_t(nn[size_t(k)])] ||
               (d[size_t(k)][size_t(a)] == d[size_t(k)][size_t(nn[size_t(k)])] &&
                a < nn[size_t(k)]))
        nn[size_t(k)] = a;
    }
    rescan(a);
  }
  return out;
}

int find_root(std::vector<int>& parent, int x) {
  while (parent[size_t(x)] != x)
    x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
  return x;
}

std::vector<compute_group> split_by_speed(const cluster& c, const std::vector<int>& devices,
                                          const grouping_options& o) {
  std::vector<int> order = devices;
  auto speed = [&](int id) { return c.devices[size_t(id)].peak_flops(o.prec); };
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    if (speed(x) != speed(y))
      return speed(x) > speed(y);
    if (c.devices[size_t(x)].kind != c.devices[size_t(y)].kind)
      return c.devices[size_t(x)].kind < c.devices[size_t(y)].kind;
    return x < y;
  });
  const std::string prec(to_string(o.prec));
  std::vector<compute_group> groups;
  size_t i = 0;
  while (i < order.size()) {
    compute_group g;
    g.max_flops = speed(order[i]);
    size_t j = i;
    while (j < order.size() && speed(order[j]) * o.speed_ratio >= g.max_flops)
      g.devices.push_back(order[j++]);
    g.min_flops = speed(order[j - 1]);
    std::map<std::string, int> kinds;
    for (int id : g.devices)
      ++kinds[c.devices[size_t(id)].kind];
    std::string what;
    for (const auto& [kind, n] : kinds)
      what += (what.empty() ? "" : " + ") + std::to_string(n) + " x " + kind;
    if (g.min_flops == g.max_flops)
      g.reason = what + ": same speed (" + tflops(g.max_flops) + " " + prec + ")";
    else
      g.reason = what + ": " + tflops(g.min_flops) + " to " + tflops(g.max_flops) + " " + prec +
                 ", within " + fixed(o.speed_ratio, "%.3g") + "x";
    if (j < order.size())
      g.reason += "; the next device (" + c.devices[size_t(order[j])].kind + ", " +
                  tflops(speed(order[j])) + ") is more than " + fixed(o.speed_ratio, "%.3g") +
                  "x slower";
    std::sort(g.devices.begin(), g.devices.end());
    groups.push_back(std::move(g));
    i = j;
  }
  return groups;
}

/// The clustering's input: the nodes that hold devices (nodes without devices take no
/// part), the cost between each two of them, and each one's weight (its devices).
struct node_costs {
  std::vector<int> atoms;                ///< node ids
  std::vector<std::vector<double>> cost; ///< [i][j] between atoms i and j
  std::vector<double> weight;
};

node_costs node_cost_matrix(const cluster& c, double bytes) {
  node_costs out;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (!c.nodes[i].devices.empty())
      out.atoms.push_back(int(i));
  const size_t n = out.atoms.size();
  out.cost.assign(n, std::vector<double>(n, 0.0));
  out.weight.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const node& a = c.nodes[size_t(out.atoms[i])];
    out.weight[i] = double(a.devices.size());
    for (size_t j = i + 1; j < n; ++j)
      out.cost[i][j] = out.cost[j][i] = node_cost(c, a, c.nodes[size_t(out.atoms[j])], bytes);
  }
  return out;
}

/// Level 1's cut: how many of `out.merges` form the groups, and the rule that says why
/// (grouping.hpp's group_devices).
void choose_cut(grouping& out, const grouping_options& o) {
  const std::string bytes = format_bytes(o.transfer_bytes);
  if (o.fast_cost_s > 0) {
    out.merges_applied = 0;
    while (out.merges_applied < int(out.merges.size()) &&
           out.merges[size_t(out.merges_applied)].cost_s <= o.fast_cost_s)
      ++out.merges_applied;
    out.rule = "merges costing at most " + format_duration(o.fast_cost_s) + " per " + bytes +
               " transfer (the given budget)";
    return;
  }
  // The highest jump of at least min_gap_ratio in [anchor, merge costs...]. Only the
  // slowest tier of links separates groups. So a LAN ten times slower than another LAN
  // does not split a region, while a WAN ten times slower still does.
  std::vector<double> seq{out.anchor_cost_s};
  for (const auto& m : out.merges)
    seq.push_back(m.cost_s);
  size_t cut = 0;
  for (size_t k = 1; k < seq.size(); ++k)
    if (seq[k] >= o.min_gap_ratio * seq[k - 1])
      cut = k;
  if (cut > 0) {
    out.merges_applied = int(cut) - 1;
    out.rule = "cut before the merge at " + format_duration(seq[cut]) + " per " + bytes +
               " transfer: " + fixed(seq[cut] / seq[cut - 1], "%.3g") + "x the previous cost " +
               format_duration(seq[cut - 1]) + (cut == 1 ? " (the same-region default)" : "") +
               ", the highest jump of at least " + fixed(o.min_gap_ratio, "%.3g") + "x";
  } else {
    out.merges_applied = int(out.merges.size());
    out.rule = "one network group: no jump of " + fixed(o.min_gap_ratio, "%.3g") +
               "x between consecutive link costs per " + bytes + " transfer";
  }
}

/// Replays the applied merges into `out.network` (nodes, devices, internal cost; groups in
/// the order of their first node) and returns each atom's group.
std::vector<size_t> form_network_groups(const cluster& c, const node_costs& nodes, grouping& out) {
  std::vector<int> parent(c.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<double> internal(c.nodes.size(), 0.0);
  for (int k = 0; k < out.merges_applied; ++k) {
    const auto& m = out.merges[size_t(k)];
    int a = find_root(parent, m.left), b = find_root(parent, m.right);
    int root = std::min(a, b);
    parent[size_t(std::max(a, b))] = root;
    internal[size_t(root)] = std::max({internal[size_t(a)], internal[size_t(b)], m.cost_s});
  }
  std::map<int, size_t> slot; // root node -> group index, in node order
  for (int a : nodes.atoms) {
    int root = find_root(parent, a);
    auto [it, fresh] = slot.emplace(root, out.network.size());
    if (fresh)
      out.network.push_back({});
    network_group& g = out.network[it->second];
    g.nodes.push_back(a);
    for (int id : c.nodes[size_t(a)].devices)
      g.devices.push_back(id);
    g.internal_cost_s = internal[size_t(root)];
  }
  std::vector<size_t> group_of_atom;
  for (int a : nodes.atoms)
    group_of_atom.push_back(slot[find_root(parent, a)]);
  return group_of_atom;
}

/// Per group, the cost to the nearest other group: the node costs averaged over device
/// pairs (0 when there is no other group).
std::vector<double> external_costs(const node_costs& nodes,
                                   const std::vector<size_t>& group_of_atom, size_t groups) {
  std::vector<std::vector<double>> sum(groups, std::vector<double>(groups, 0.0)), w(sum);
  const size_t n = nodes.atoms.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      size_t gi = group_of_atom[i], gj = group_of_atom[j];
      if (gi == gj)
        continue;
      double pairs = nodes.weight[i] * nodes.weight[j];
      sum[gi][gj] += pairs * nodes.cost[i][j];
      w[gi][gj] += pairs;
    }
  std::vector<double> out(groups);
  for (size_t gi = 0; gi < groups; ++gi) {
    double external = std::numeric_limits<double>::infinity();
    for (size_t gj = 0; gj < groups; ++gj)
      if (gj != gi && w[gi][gj] > 0)
        external = std::min(external, sum[gi][gj] / w[gi][gj]);
    out[gi] = std::isinf(external) ? 0 : external;
  }
  return out;
}

/// Why a network group's nodes are together and apart from the rest, in one line.
std::string group_reason(const cluster& c, const network_group& g, const std::string& bytes,
                         bool alone) {
  std::string names;
  for (int a : g.nodes)
    names += (names.empty() ? "" : ", ") + c.nodes[size_t(a)].name;
  std::string reason = (g.nodes.size() == 1 ? "node " : "nodes ") + names + ": ";
  reason += g.nodes.size() == 1
                ? std::string("one host")
                : "joined at <= " + format_duration(g.internal_cost_s) + " per " + bytes;
  if (!alone)
    reason += "; >= " + format_duration(g.external_cost_s) + " to the nearest other group";
  return reason;
}

} // namespace

grouping group_devices(const cluster& c, const grouping_options& o) {
  if (!(o.transfer_bytes > 0))
    throw std::invalid_argument("grouping needs a positive representative transfer size");
  if (!(o.min_gap_ratio > 1) || !(o.speed_ratio >= 1))
    throw std::invalid_argument("grouping ratios must be above 1");
  const node_costs nodes = node_cost_matrix(c, o.transfer_bytes);
  dendrogram tree = cluster_nodes(nodes.cost, nodes.weight);

  grouping out;
  for (const auto& m : tree.merges)
    out.merges.push_back({nodes.atoms[size_t(m.left)], nodes.atoms[size_t(m.right)], m.cost_s});
  out.anchor_cost_s = c.links.same_region.transfer_time(o.transfer_bytes);
  choose_cut(out, o);

  const std::vector<size_t> group_of_atom = form_network_groups(c, nodes, out);
  const size_t G = out.network.size();
  const std::vector<double> external = external_costs(nodes, group_of_atom, G);
  const std::string bytes = format_bytes(o.transfer_bytes);
  for (size_t gi = 0; gi < G; ++gi) {
    network_group& g = out.network[gi];
    std::sort(g.devices.begin(), g.devices.end());
    g.external_cost_s = external[gi];
    g.reason = group_reason(c, g, bytes, G == 1);
    g.compute = split_by_speed(c, g.devices, o);
  }
  return out;
}

} // namespace deepcee::runtime
