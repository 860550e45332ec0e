#pragma once

// The clusters the tests run on, written once: the repository's cluster files (found
// wherever a test's source file sits) and the small clusters the tests describe inline.

#include "runtime/cluster/cluster.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <filesystem>
#include <string>

namespace deepcee::test {

/// The repository's root, which CMake gives every test executable (deepcee_test_executable).
inline std::filesystem::path repo_root() {
  return DEEPCEE_SOURCE_DIR;
}

inline std::filesystem::path configs_dir() {
  return repo_root() / "configs";
}

inline std::filesystem::path clusters_dir() {
  return configs_dir() / "clusters";
}

/// configs/clusters/NAME.toml
inline std::filesystem::path cluster_file(const std::string& name) {
  return clusters_dir() / (name + ".toml");
}

/// Two regions joined by a slow WAN; seven devices of three kinds.
inline runtime::cluster actors_test_cluster() {
  return runtime::parse_cluster(R"(
name = "actors-test"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "1Gbps", latency = "1ms" }
cross_region = { bandwidth = "100Mbps", latency = "40ms" }
[[region]]
name = "cloud"
tier = "cloud"
[[region]]
name = "edge"
tier = "edge"
[[node]]
name = "c0"
region = "cloud"
devices = [{ kind = "A100-80GB", count = 2 }, { kind = "T4", count = 2 }]
[[node]]
name = "e0"
region = "edge"
devices = [{ kind = "Jetson-AGX-Orin", count = 3 }]
)",
                                "actors-test");
}

/// actors_test_cluster with a 2 Mbps WAN: a micro-batch's activation takes about as long
/// to drain as the latency, so transfers that share the WAN pipe queue behind each other.
inline runtime::cluster slow_wan_cluster() {
  auto c = actors_test_cluster();
  c.links.cross_region.bandwidth_Bps = 2e6 / 8;
  return c;
}

/// actors_test_cluster with a 2 Mbps, 5 ms WAN: one 4 KiB activation of the tiny model
/// drains in 16 ms.
inline runtime::cluster slow_short_wan_cluster() {
  auto c = slow_wan_cluster();
  c.links.cross_region.latency_s = 5e-3;
  return c;
}

/// One region of two nodes joined by a 2 Mbps, 5 ms LAN: pipelines that cross from one node
/// to the other share its interfaces (each direction), whatever the device pair.
inline runtime::cluster slow_lan_two_nodes_cluster() {
  return runtime::parse_cluster(R"(
name = "slow-lan"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "2Mbps", latency = "5ms" }
[[region]]
name = "lan"
tier = "edge"
[[node]]
name = "n0"
region = "lan"
devices = [{ kind = "A100-80GB", count = 3 }]
[[node]]
name = "n1"
region = "lan"
devices = [{ kind = "T4", count = 3 }]
)",
                                "slow-lan");
}

/// 64 A100s on eight nodes in two regions.
inline runtime::cluster a100_64_cluster() {
  std::string text = R"(
name = "a100-64"
[links]
same_node = { bandwidth = "300GB/s", latency = "5us" }
same_region = { bandwidth = "100Gbps", latency = "20us" }
cross_region = { bandwidth = "10Gbps", latency = "10ms" }
[[region]]
name = "east"
tier = "cloud"
[[region]]
name = "west"
tier = "cloud"
)";
  for (int n = 0; n < 8; ++n)
    text += "[[node]]\nname = \"n" + std::to_string(n) + "\"\nregion = \"" +
            (n < 4 ? "east" : "west") + "\"\ndevices = [{ kind = \"A100-80GB\", count = 8 }]\n";
  return runtime::parse_cluster(text, "a100-64");
}

/// Four A100s on one node.
inline runtime::cluster four_a100_cluster() {
  return runtime::parse_cluster(R"(
name = "four"
[links]
same_node = { bandwidth = "300GB/s", latency = "5us" }
same_region = { bandwidth = "100Gbps", latency = "20us" }
cross_region = { bandwidth = "10Gbps", latency = "10ms" }
[[region]]
name = "east"
tier = "cloud"
[[node]]
name = "n0"
region = "east"
devices = [{ kind = "A100-80GB", count = 4 }]
)",
                                "four");
}

/// One T4: too small for a 7B model.
inline runtime::cluster one_t4_cluster() {
  return runtime::parse_cluster(R"(
[[region]]
name = "r"
tier = "cloud"
[[node]]
name = "n"
region = "r"
devices = [{ kind = "T4" }]
)",
                                "tiny.toml");
}

/// Two A100 nodes in a data centre and an RTX4090 behind a 2 Mbps, 200 ms link.
inline runtime::cluster slow_corner_cluster() {
  return runtime::parse_cluster(R"(
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "10Gbps", latency = "0.1ms" }
cross_region = { bandwidth = "1Gbps", latency = "5ms" }
[[region]]
name = "dc"
tier = "cloud"
[[region]]
name = "far"
tier = "end"
[[node]]
name = "a"
region = "dc"
replicas = 2
devices = [{ kind = "A100-80GB", count = 2 }]
[[node]]
name = "x"
region = "far"
devices = [{ kind = "RTX4090" }]
[[link]]
between = ["far", "dc"]
bandwidth = "2Mbps"
latency = "200ms"
)",
                                "slow.toml");
}

/// Five nodes in three regions (cloud, edge, end), devices of six kinds.
inline runtime::cluster three_region_cluster() {
  return runtime::parse_cluster(R"(
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
name = "c0"
region = "cloud"
devices = [{ kind = "T4", count = 2 }, { kind = "A100-80GB", count = 2 }]
[[node]]
name = "e0"
region = "edge"
devices = [{ kind = "A10", count = 2 }]
[[node]]
name = "c1"
region = "cloud"
devices = [{ kind = "A100-40GB", count = 2 }]
[[node]]
name = "e1"
region = "edge"
devices = [{ kind = "T4" }]
[[node]]
name = "x"
region = "end"
replicas = 3
devices = [{ kind = "Jetson-AGX-Orin" }]
)",
                                "g.toml");
}

/// configs/clusters/four-pipes.toml: four nodes of two Jetson AGX Orins in one region, a
/// 2.5 Gbps link inside each node, 10 Gbps between nodes (the adapter tests' cluster; the
/// file says why).
inline runtime::cluster four_pipes_cluster() {
  return runtime::load_cluster(cluster_file("four-pipes"));
}

} // namespace deepcee::test
