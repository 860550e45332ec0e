// The planner against plans written by hand, all evaluated by the same simulator. It runs
// every scenario of configs/scenarios, and clusters made here that no test tunes to. On
// each, every plan of several hand-made kinds over several device sets is simulated. The
// table prints the planner's samples/s beside the best hand plan's, and deepcee / ideal.
//
//   build/bench/bench_hand_plans [configs/clusters] [--quick]
//
// Each kind is tried over every device, each region alone, and the regions added fastest
// first. The kinds:
// Data-parallel only: one device per pipeline, or one stage of every device.
// K-stage pipelines: stages contiguous in config order or by node, split evenly or
// balanced under memory (the planner's partition).
// Hybrids of P pipelines x k stages: pipeline-major (a pipeline's stages together) or
// stage-major (a stage's replicas together).
// Per-region pipelines: each region its own pipelines, so no pipeline crosses the WAN.
// Region-stage pipelines: one stage per region.
// Each is tried with every compression (none, bf16, int8 across regions, and on every hop
// between nodes). It is tried with the schedules 1F1B, ZB-H1, ZB-H2 and greedy, and every
// micro-batch size that divides the batch. --quick (and clusters of more than 64 devices)
// keeps 1F1B and greedy and at most 6 micro-batch sizes.
#include "runtime/io/cluster_toml.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

struct scenario {
  std::string id;
  cluster c;
  std::string model;
  int batch;
};

/// Eight RTX 4090 workstations on a 1 Gbps office LAN: an edge-heavy cluster.
const char* edge_4090_lan = R"(
name = "edge-4090-lan"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "1Gbps", latency = "0.3ms" }
cross_region = { bandwidth = "1Gbps", latency = "0.3ms" }
[[region]]
name = "lan"
tier = "edge"
[[node]]
name = "ws"
region = "lan"
replicas = 8
devices = [{ kind = "RTX4090" }]
)";

/// Two sites: four A10 servers with two GPUs on 10 Gbps, and four RTX 3090 workstations on
/// 1 Gbps, joined by 200 Mbps.
const char* two_sites = R"(
name = "two-sites"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "10Gbps", latency = "0.1ms" }
cross_region = { bandwidth = "200Mbps", latency = "20ms" }
[[region]]
name = "dc"
tier = "cloud"
[[region]]
name = "lab"
tier = "edge"
[[node]]
name = "a10"
region = "dc"
replicas = 4
devices = [{ kind = "A10", count = 2 }]
[[node]]
name = "ws"
region = "lab"
replicas = 4
devices = [{ kind = "RTX3090" }]
[[link]]
between = ["lab", "lab"]
bandwidth = "1Gbps"
latency = "0.5ms"
)";

/// Two 4-GPU RTX 4090 boxes on 2.5 Gbps and four Jetson AGX Orin on 100 Mbps Wi-Fi.
const char* boxes_and_jetsons = R"(
name = "boxes-and-jetsons"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "2.5Gbps", latency = "0.2ms" }
cross_region = { bandwidth = "100Mbps", latency = "15ms" }
[[region]]
name = "boxes"
tier = "edge"
[[region]]
name = "wifi"
tier = "end"
[[node]]
name = "box"
region = "boxes"
replicas = 2
devices = [{ kind = "RTX4090", count = 4 }]
[[node]]
name = "orin"
region = "wifi"
replicas = 4
devices = [{ kind = "Jetson-AGX-Orin" }]
)";

constexpr size_t large_cluster = 64;

struct best_hand {
  std::string what = "-";
  double rate = 0;
  int simulated = 0;
};

std::string layout_name(const std::vector<pipeline_layout>& layout) {
  std::map<size_t, int> shapes;
  for (const auto& pl : layout)
    shapes[pl.stages.size()]++;
  std::string s;
  for (const auto& [stages, count] : shapes)
    s += (s.empty() ? "" : "+") + std::to_string(count) + "x" + std::to_string(stages);
  return s;
}

/// P pipelines of k stages of g devices over `devs` (|devs| = P k g): pipeline-major puts
/// pipeline p on devs[p k g, (p + 1) k g); stage-major puts stage s on devs[s P g, ...).
std::vector<pipeline_layout> grid(const std::vector<int>& devs, int pipes, int stages,
                                  bool stage_major) {
  const int g = static_cast<int>(devs.size()) / (pipes * stages);
  std::vector<pipeline_layout> out(static_cast<size_t>(pipes));
  for (int p = 0; p < pipes; ++p)
    for (int s = 0; s < stages; ++s) {
      const int first = stage_major ? (s * pipes + p) * g : (p * stages + s) * g;
      out[size_t(p)].stages.emplace_back(devs.begin() + first, devs.begin() + first + g);
    }
  return out;
}

using named_layouts = std::vector<std::pair<std::string, std::vector<pipeline_layout>>>;

/// Pipelines whose stages are the groups (nodes or regions), in group order: 1, 2, 4, ...
/// of them up to the smallest group's device count, pipeline p taking every group's
/// devices p, p + P, p + 2P, ...
void add_group_stages(const std::map<int, std::vector<int>>& groups, const std::string& label,
                      named_layouts& out) {
  size_t smallest = std::numeric_limits<size_t>::max();
  for (const auto& [group, v] : groups)
    smallest = std::min(smallest, v.size());
  for (size_t pipes = 1; pipes <= smallest; pipes *= 2) {
    std::vector<pipeline_layout> l(pipes);
    for (const auto& [group, v] : groups)
      for (size_t p = 0; p < pipes; ++p) {
        std::vector<int> st;
        for (size_t k = p; k < v.size(); k += pipes)
          st.push_back(v[k]);
        l[p].stages.push_back(st);
      }
    out.emplace_back(label + layout_name(l), l);
  }
}

/// Layouts of every kind over one device set.
named_layouts layouts_of(const cluster& c, const std::vector<int>& devs, int layers) {
  named_layouts out;
  const int n = static_cast<int>(devs.size());
  // Clusters of more than 64 devices: pipeline counts and stage counts powers of two,
  // stages up to 8 (each layout costs a simulation of hundreds of devices).
  const bool large = c.devices.size() > large_cluster;
  const auto skip = [&](int v) { return large && (v & (v - 1)) != 0 && v != n; };
  for (int pipes = 1; pipes <= n; ++pipes) {
    if (n % pipes || skip(pipes))
      continue;
    for (int stages = 1; stages <= n / pipes && stages <= layers; ++stages) {
      if ((n / pipes) % stages || skip(stages) || (large && stages > 8))
        continue;
      const std::string shape = std::to_string(pipes) + "x" + std::to_string(stages);
      if (stages == 1) {
        out.emplace_back(pipes == n ? "dp" : "dp " + shape, grid(devs, pipes, 1, false));
        continue;
      }
      out.emplace_back("pipe " + shape, grid(devs, pipes, stages, false));
      if (pipes > 1)
        out.emplace_back("pipe " + shape + " stage-major", grid(devs, pipes, stages, true));
    }
  }
  // Stages by node: P pipelines, each taking every node's devices round robin.
  std::map<int, std::vector<int>> by_node, by_region;
  for (int d : devs) {
    by_node[c.devices[size_t(d)].node].push_back(d);
    by_region[c.devices[size_t(d)].region].push_back(d);
  }
  if (by_node.size() > 1 && static_cast<int>(by_node.size()) <= layers)
    add_group_stages(by_node, "node-stages ", out);
  if (by_region.size() > 1) {
    // Per-region pipelines: each region its own pipelines of one stage per node; no
    // pipeline crosses the WAN.
    for (int per_node : {0, 1}) {
      std::vector<pipeline_layout> l;
      for (const auto& [region, v] : by_region) {
        std::map<int, std::vector<int>> nodes;
        for (int d : v)
          nodes[c.devices[size_t(d)].node].push_back(d);
        if (per_node) {
          pipeline_layout pl;
          for (const auto& [node, nd] : nodes)
            pl.stages.push_back(nd);
          if (static_cast<int>(pl.stages.size()) <= layers)
            l.push_back(pl);
        } else {
          for (int d : v)
            l.push_back({{{d}}});
        }
      }
      out.emplace_back(per_node ? "region-pipes (node stages)" : "region-pipes (dp)", l);
    }
    // Region stages: pipelines whose stages are the regions.
    add_group_stages(by_region, "region-stages ", out);
  }
  return out;
}

/// Device sets: every device, each region alone, and regions added fastest first.
std::vector<std::pair<std::string, std::vector<int>>> device_sets(const cluster& c,
                                                                  const cost_cache& costs) {
  std::map<int, std::vector<int>> by_region;
  std::map<int, double> speed;
  for (const auto& d : c.devices) {
    by_region[d.region].push_back(d.id);
    speed[d.region] += costs.speed(d.id, 1);
  }
  std::vector<std::pair<std::string, std::vector<int>>> out;
  std::vector<int> all;
  for (const auto& d : c.devices)
    all.push_back(d.id);
  out.emplace_back("all", all);
  if (by_region.size() < 2)
    return out;
  std::vector<int> order;
  for (const auto& [r, v] : by_region) {
    out.emplace_back(c.regions[size_t(r)].name, v);
    order.push_back(r);
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return speed[a] > speed[b]; });
  std::vector<int> prefix;
  std::string name;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    prefix.insert(prefix.end(), by_region[order[i]].begin(), by_region[order[i]].end());
    name += (name.empty() ? "" : "+") + c.regions[size_t(order[i])].name;
    if (i > 0) {
      std::vector<int> sorted = prefix;
      std::sort(sorted.begin(), sorted.end());
      out.emplace_back(name, sorted);
    }
  }
  return out;
}

best_hand best_hand_plan(const scenario& sc, const profile_table& profiles, bool quick) {
  const cluster& c = sc.c;
  cost_cache costs(c, profiles);
  const int layers = costs.layer_count();
  const bool small = !quick && c.devices.size() <= large_cluster;
  const bool large = c.devices.size() > large_cluster;
  std::vector<schedule_kind> schedules{schedule_kind::one_f_one_b, schedule_kind::greedy};
  if (small)
    schedules = {schedule_kind::one_f_one_b, schedule_kind::zb_h1, schedule_kind::zb_h2,
                 schedule_kind::greedy};
  std::vector<std::pair<compression, compression>> comps{{compression::none, compression::none},
                                                         {compression::bf16, compression::none},
                                                         {compression::int8, compression::none},
                                                         {compression::bf16, compression::bf16},
                                                         {compression::int8, compression::int8}};
  if (large)
    comps = {{compression::none, compression::none},
             {compression::int8, compression::none},
             {compression::int8, compression::int8}};
  best_hand best;
  for (const auto& [set_name, devs] : device_sets(c, costs)) {
    for (const auto& [kind, layout] : layouts_of(c, devs, layers)) {
      size_t widest = 0;
      for (const auto& pl : layout)
        for (const auto& st : pl.stages)
          widest = std::max(widest, st.size());
      const int pipes = static_cast<int>(layout.size());
      std::vector<int> sizes =
          divisors_between(sc.batch, static_cast<int>(widest), sc.batch / pipes);
      if (!small)
        sizes = thin(sizes, large ? 4 : 6);
      for (bool balanced : {false, true})
        for (const auto& comp : comps)
          for (schedule_kind sched : schedules)
            for (int b : sizes) {
              build_options o;
              o.strategy = "hand";
              o.model_name = sc.model;
              o.micro_batch_size = b;
              o.schedule = sched;
              o.cross_region = comp.first;
              o.inter_node = comp.second;
              o.balance_layers = balanced;
              o.respect_memory = balanced;
              if (large && !balanced && layout.front().stages.size() > 1)
                continue; // a large cluster's pipelines: the balanced split alone
              auto p = build_plan(costs, layout, sc.batch, o);
              if (!p)
                continue;
              sim_result r;
              try {
                r = simulate(c, profiles.model(), profiles, *p);
              } catch (const std::exception&) {
                continue;
              }
              ++best.simulated;
              if (r.out_of_memory || r.samples_per_s <= best.rate)
                continue;
              best.rate = r.samples_per_s;
              best.what = kind + " on " + set_name + ", " + (balanced ? "balanced" : "even") +
                          ", " + std::string(to_string(sched)) + ", b=" + std::to_string(b) + ", " +
                          std::string(to_string(comp.first)) + "/" +
                          std::string(to_string(comp.second));
            }
    }
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  std::string dir = "configs/clusters";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else
      dir = a;
  }
  std::vector<scenario> scenarios;
  auto file = [&](const std::string& id, const std::string& name, const std::string& model,
                  int batch) {
    scenarios.push_back({id, load_cluster(dir + "/" + name + ".toml"), model, batch});
  };
  file("a1", "deepcee-testbed", "gpt2-124m", 512);
  file("a2", "deepcee-testbed", "gpt2-355m", 512);
  file("b", "deepcee-testbed-500mbps", "gpt2-124m", 512);
  file("c", "cee-mixed", "gpt2-355m", 512);
  file("d", "datacenter-mixed", "gpt2-355m", 512);
  scenarios.push_back({"x1", parse_cluster(edge_4090_lan, "edge-4090-lan"), "gpt2-124m", 512});
  scenarios.push_back({"x2", parse_cluster(edge_4090_lan, "edge-4090-lan"), "gpt2-355m", 512});
  scenarios.push_back({"x3", parse_cluster(two_sites, "two-sites"), "gpt2-355m", 512});
  scenarios.push_back(
      {"x4", parse_cluster(boxes_and_jetsons, "boxes-and-jetsons"), "gpt2-124m", 256});
  file("e", "cee-1024", "gpt2-1.5b", 1024);

  std::printf("%-3s %-18s %-10s %5s %9s %9s %9s %7s %6s %8s  %s\n", "id", "cluster", "model",
              "batch", "planner", "best hand", "ratio", "ideal", "of id", "search s",
              "best hand plan (simulated)");
  for (const auto& sc : scenarios) {
    profile_table profiles(make_model_spec(*model_preset(sc.model), sc.model));
    planner_options o;
    o.model_name = sc.model;
    o.global_batch = sc.batch;
    const planner_report r = plan_training(sc.c, profiles, o);
    const best_hand h = best_hand_plan(sc, profiles, quick);
    const double ideal = ideal_samples_per_s(sc.c, profiles);
    const double mine = r.best_sim.samples_per_s;
    std::printf("%-3s %-18s %-10s %5d %9.2f %9.2f %8.3fx %7.1f %6.3f %8.2f  %s (%d)\n",
                sc.id.c_str(), sc.c.name.c_str(), sc.model.c_str(), sc.batch, mine, h.rate,
                h.rate > 0 ? mine / h.rate : 0.0, ideal, mine / ideal, r.search_s, h.what.c_str(),
                h.simulated);
    std::fflush(stdout);
  }
  return 0;
}
