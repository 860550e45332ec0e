// Planner search time against cluster size: synthetic three-tier clusters of growing size
// (cloud nodes of 8 A100, edge nodes of 4 T4, single Jetson end devices, in the 1:1:2
// device ratio of cee-1024) planned for GPT-2 1.5B. Prints one row per size, with the ideal
// (every device alone, no communication: ideal_samples_per_s) and deepcee's share of it.
#include "runtime/io/cluster_toml.hpp"
#include "runtime/planner/planner.hpp"

#include <cstdio>
#include <string>

namespace {

std::string three_tier(int cloud_nodes, int edge_nodes, int end_devices) {
  return R"(
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "10Gbps", latency = "0.1ms" }
cross_region = { bandwidth = "100Mbps", latency = "40ms" }
[[region]]
name = "cloud"
tier = "cloud"
[[region]]
name = "edge"
tier = "edge"
[[region]]
name = "end"
tier = "end"
[[node]]
name = "c"
region = "cloud"
replicas = )" +
         std::to_string(cloud_nodes) +
         R"(
devices = [{ kind = "A100-80GB", count = 8 }]
[[node]]
name = "e"
region = "edge"
replicas = )" +
         std::to_string(edge_nodes) +
         R"(
devices = [{ kind = "T4", count = 4 }]
[[node]]
name = "x"
region = "end"
replicas = )" +
         std::to_string(end_devices) +
         R"(
devices = [{ kind = "Jetson-AGX-Orin" }]
[[link]]
between = ["cloud", "edge"]
bandwidth = "1Gbps"
latency = "20ms"
)";
}

} // namespace

int main() {
  using namespace deepcee::runtime;
  const std::string model = "gpt2-1.5b";
  profile_table profiles(make_model_spec(*model_preset(model), model));
  std::printf("%8s %8s %10s %10s %10s %12s %12s %9s\n", "devices", "batch", "search s", "estimated",
              "simulated", "samples/s", "ideal", "vs ideal");
  for (int scale : {1, 2, 4, 8, 16, 32}) {
    int cloud = scale, edge = 2 * scale, end = 4 * scale;
    cluster c = parse_cluster(three_tier(cloud, edge, end), "bench");
    planner_options o;
    o.model_name = model;
    o.global_batch = std::max<int>(512, static_cast<int>(c.devices.size()));
    planner_report r = plan_training(c, profiles, o);
    const double ideal = ideal_samples_per_s(c, profiles);
    std::printf("%8zu %8d %10.3f %10d %10d %12.2f %12.2f %9.2f\n", c.devices.size(), r.global_batch,
                r.search_s, r.plans_estimated, r.plans_simulated, r.best_sim.samples_per_s, ideal,
                r.best_sim.samples_per_s / ideal);
    std::fflush(stdout);
  }
  return 0;
}
