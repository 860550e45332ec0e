#include "runtime/base/errors.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

#include <filesystem>
#include <string>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

const char* const base = R"(name = "t"
[links]
same_node = { bandwidth = "300GB/s", latency = "5us" }
same_region = { bandwidth = "10Gbps", latency = "0.2ms" }
cross_region = { bandwidth = "100Mbps", latency = "40ms" }
[[region]]
name = "cloud"
tier = "cloud"
[[region]]
name = "edge"
tier = "edge"
[[node]]
name = "cloud0"
region = "cloud"
devices = [{ kind = "RTX3090", count = 2 }, { kind = "A100-80GB", memory = "40GiB" }]
[[node]]
name = "cloud1"
region = "cloud"
devices = [{ kind = "RTX3090" }]
[[node]]
name = "edge0"
region = "edge"
devices = [{ kind = "T4", count = 2 }]
)";
// Lines 1-23 above; tests append from line 24 on.

/// The message of the input_error that parsing `text` throws ("" if none).
std::string error_of(const std::string& text) {
  try {
    parse_cluster(text, "c.toml");
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  std::string message = error_of(text);
  BOOST_TEST_INFO("message: " << message);
  BOOST_TEST(message.rfind(where + ": ", 0) == 0);
  BOOST_TEST(message.find(what) != std::string::npos);
  BOOST_TEST(message.find('\n') == std::string::npos);
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_suite)

BOOST_AUTO_TEST_CASE(parses_regions_nodes_and_devices) {
  cluster c = parse_cluster(base, "c.toml");
  BOOST_TEST(c.name == "t");
  BOOST_TEST(c.regions.size() == 2u);
  BOOST_TEST((c.regions[1].tier == region_tier::edge));
  BOOST_TEST(c.nodes.size() == 3u);
  BOOST_TEST(c.devices.size() == 6u);
  for (size_t i = 0; i < c.devices.size(); ++i)
    BOOST_TEST(c.devices[i].id == int(i));
  BOOST_TEST(c.devices[0].name == "cloud0/0");
  BOOST_TEST(c.devices[2].name == "cloud0/2");
  BOOST_TEST(c.devices[2].kind == "A100-80GB");
  BOOST_TEST(c.devices[4].name == "edge0/0");
  BOOST_TEST(c.devices[4].region == 1);
  BOOST_TEST(c.devices[3].node == 1);
  BOOST_TEST(c.nodes[0].devices == std::vector<int>({0, 1, 2}));
}

BOOST_AUTO_TEST_CASE(device_figures_come_from_the_catalogue_unless_overridden) {
  cluster c = parse_cluster(std::string(base) + R"([[node]]
name = "odd"
region = "edge"
devices = [{ kind = "rtx 3090", name = "slow", fp32_flops = "10TFLOPS", bf16_flops = 20, mem_bandwidth = 500 }]
)",
                            "c.toml");
  BOOST_TEST(c.devices[0].fp32_flops == 35.6e12);
  BOOST_TEST(c.devices[0].memory_bytes == 24.0 * (1 << 30));
  BOOST_TEST(c.devices[2].memory_bytes == 40.0 * (1 << 30)); // overridden
  BOOST_TEST(c.devices[2].fp32_flops == 19.5e12);            // not overridden
  const device& slow = c.devices[6];
  BOOST_TEST(slow.name == "slow");
  BOOST_TEST(slow.kind == "RTX3090");
  BOOST_TEST(slow.fp32_flops == 10e12);
  BOOST_TEST(slow.bf16_flops == 20e12);
  BOOST_TEST(slow.mem_bandwidth_Bps == 500e9);
}

BOOST_AUTO_TEST_CASE(link_defaults_per_level) {
  cluster c = parse_cluster(base, "c.toml");
  BOOST_TEST((c.level_between(0, 0) == link_level::self));
  BOOST_TEST((c.level_between(0, 1) == link_level::same_node));
  BOOST_TEST((c.level_between(0, 3) == link_level::same_region));
  BOOST_TEST((c.level_between(0, 4) == link_level::cross_region));
  BOOST_TEST(c.link_between(0, 0).latency_s == 0);
  BOOST_TEST(std::isinf(c.link_between(0, 0).bandwidth_Bps));
  BOOST_TEST(c.link_between(0, 1).bandwidth_Bps == 300e9);
  BOOST_TEST(c.link_between(0, 1).latency_s == 5e-6);
  BOOST_TEST(c.link_between(0, 3).bandwidth_Bps == 10e9 / 8);
  BOOST_TEST(c.link_between(0, 3).latency_s == 0.2e-3);
  BOOST_TEST(c.link_between(4, 0).bandwidth_Bps == 100e6 / 8);
  BOOST_TEST(c.link_between(4, 0).latency_s == 40e-3);
  BOOST_TEST(c.link_between(0, 4).transfer_time(12.5e6) == 40e-3 + 1.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(built_in_defaults_without_a_links_table) {
  cluster c = parse_cluster(R"([[region]]
name = "r"
tier = "end"
[[node]]
name = "n"
region = "r"
devices = [{ kind = "CPU", count = 2 }]
)",
                            "c.toml");
  BOOST_TEST((c.links.same_node == link_defaults{}.same_node));
  BOOST_TEST(c.link_between(0, 1).bandwidth_Bps == 16e9);
}

BOOST_AUTO_TEST_CASE(overrides_most_specific_wins_and_directions) {
  cluster c = parse_cluster(std::string(base) + R"([[link]]
between = ["cloud", "edge"]
bandwidth = "200Mbps"
[[link]]
between = ["edge0", "cloud1"]
bandwidth = "50Mbps"
latency = "30ms"
[[link]]
from = "edge0/1"
to = "cloud1/0"
bandwidth = 0.01
[[link]]
between = ["cloud", "cloud"]
latency = 1
)",
                            "c.toml");
  // Region pair: bandwidth overridden, latency from the cross-region default.
  BOOST_TEST(c.link_between(0, 4).bandwidth_Bps == 200e6 / 8);
  BOOST_TEST(c.link_between(4, 0).bandwidth_Bps == 200e6 / 8);
  BOOST_TEST(c.link_between(0, 4).latency_s == 40e-3);
  // Node pair beats region pair, both directions.
  BOOST_TEST(c.link_between(3, 4).bandwidth_Bps == 50e6 / 8);
  BOOST_TEST(c.link_between(4, 3).latency_s == 30e-3);
  // Device pair, one direction only (0.01 Gbps = 10 Mbps).
  BOOST_TEST(c.link_between(5, 3).bandwidth_Bps == 10e6 / 8);
  BOOST_TEST(c.link_between(5, 3).latency_s == 40e-3); // level default, not the node pair's
  BOOST_TEST(c.link_between(3, 5).bandwidth_Bps == 50e6 / 8);
  // A region's own override sets its LAN, but never the bus inside one node.
  BOOST_TEST(c.link_between(0, 3).latency_s == 1e-3);
  BOOST_TEST(c.link_between(0, 3).bandwidth_Bps == 10e9 / 8);
  BOOST_TEST(c.link_between(0, 1).latency_s == 5e-6);
}

BOOST_AUTO_TEST_CASE(replicated_nodes_get_numbered_names_and_ports) {
  cluster c = parse_cluster(R"([[region]]
name = "r"
tier = "cloud"
[[node]]
name = "gpu"
region = "r"
host = "10.0.0.1"
port = 7000
replicas = 3
devices = [{ kind = "L4", count = 2 }]
)",
                            "c.toml");
  BOOST_TEST(c.nodes.size() == 3u);
  BOOST_TEST(c.nodes[2].name == "gpu2");
  BOOST_TEST(c.nodes[2].port == 7002);
  BOOST_TEST(c.nodes[2].host == "10.0.0.1");
  BOOST_TEST(c.devices[5].name == "gpu2/1");
  BOOST_TEST(c.find_device("gpu1/0").value() == 2);
  BOOST_TEST(c.find_node("gpu1").value() == 1);
  BOOST_TEST(!c.find_region("gpu").has_value());
}

BOOST_AUTO_TEST_CASE(every_scenario_file_parses) {
  struct expectation {
    const char* file;
    size_t regions, nodes, devices;
  } files[] = {{"deepcee-testbed.toml", 3, 7, 15}, {"deepcee-testbed-500mbps.toml", 3, 7, 15},
               {"cee-mixed.toml", 3, 8, 16},       {"datacenter-mixed.toml", 1, 6, 24},
               {"cee-1024.toml", 8, 464, 1024},    {"cee-small.toml", 3, 4, 6}};
  for (const auto& f : files) {
    BOOST_TEST_CONTEXT(f.file) {
      cluster c = load_cluster(deepcee::test::clusters_dir() / f.file);
      BOOST_TEST(c.regions.size() == f.regions);
      BOOST_TEST(c.nodes.size() == f.nodes);
      BOOST_TEST(c.devices.size() == f.devices);
    }
  }
}

BOOST_AUTO_TEST_CASE(testbed_links_follow_the_issue) {
  cluster c = load_cluster(deepcee::test::clusters_dir() / "deepcee-testbed.toml");
  const int cloud = *c.find_device("cloud0/0"), cloud1 = *c.find_device("cloud1/0");
  const int edge = *c.find_device("edge0/0"), end = *c.find_device("end0/0");
  const int end2 = *c.find_device("end2/0");
  BOOST_TEST(c.link_between(cloud, edge).bandwidth_Bps == 100e6 / 8);
  BOOST_TEST(c.link_between(end, cloud).bandwidth_Bps == 100e6 / 8);
  BOOST_TEST(c.link_between(edge, end).bandwidth_Bps >= 1e9 / 8);
  BOOST_TEST(c.link_between(cloud, cloud1).bandwidth_Bps >= 1e9 / 8);
  BOOST_TEST(c.link_between(end, end2).bandwidth_Bps >= 1e9 / 8);
  cluster b = load_cluster(deepcee::test::clusters_dir() / "deepcee-testbed-500mbps.toml");
  for (int x = 0; x < int(b.devices.size()); ++x)
    for (int y = 0; y < int(b.devices.size()); ++y)
      if (b.devices[x].node != b.devices[y].node)
        BOOST_TEST(b.link_between(x, y).bandwidth_Bps == 500e6 / 8);
}

BOOST_AUTO_TEST_CASE(a_node_may_give_its_network_interface) {
  cluster c = parse_cluster(std::string(base) + R"([[node]]
name = "fast"
region = "edge"
nic = "25Gbps"
replicas = 2
devices = [{ kind = "T4" }]
)",
                            "c.toml");
  for (const char* name : {"fast0", "fast1"})
    BOOST_TEST(*c.nodes[static_cast<size_t>(*c.find_node(name))].nic_Bps == 25e9 / 8);
  BOOST_TEST(!c.nodes[static_cast<size_t>(*c.find_node("cloud0"))].nic_Bps);
}

BOOST_AUTO_TEST_CASE(bad_input_names_file_and_line) {
  const std::string b = base;
  expect_error(
      b + "[[node]]\nname = \"x\"\nregion = \"edge\"\ndevices = [{ kind = \"GTX1080\" }]\n",
      "c.toml:27", "unknown device kind 'GTX1080' (known: H100-SXM, ");
  expect_error(b + "[[node]]\nname = \"x\"\nregion = \"edge\"\ndevices = [{ kind = \"A100\" }]\n",
               "c.toml:27", "unknown device kind 'A100'");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge9\"]\nbandwidth = \"1Gbps\"\n",
               "c.toml:25", "unknown node, device or region 'edge9'");
  expect_error(b + "[[link]]\nfrom = \"cloud0/7\"\nto = \"edge0\"\nbandwidth = \"1Gbps\"\n",
               "c.toml:25", "'cloud0/7'");
  expect_error(
      b + "[[node]]\nname = \"x\"\nregion = \"edge\"\nnic = \"0Gbps\"\ndevices = [{ kind = "
          "\"T4\" }]\n",
      "c.toml:27", "nic must be positive");
  expect_error(b + "[[node]]\nname = \"x\"\nregion = \"edge\"\nnic = \"fast\"\ndevices = [{ kind = "
                   "\"T4\" }]\n",
               "c.toml:27", "'fast' is not understood");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nbandwidth = \"0Mbps\"\n",
               "c.toml:26", "bandwidth must be positive");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nbandwidth = -3\n", "c.toml:26",
               "bandwidth must be positive");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nlatency = \"-1ms\"\n", "c.toml:26",
               "latency must not be negative");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nbandwidth = \"fast\"\n",
               "c.toml:26", "'fast' is not understood");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nbandwith = \"1Gbps\"\n",
               "c.toml:26", "unknown key 'bandwith' in [[link]]");
  expect_error(b + "[[link]]\nbetween = [\"cloud0\", \"edge0\"]\nlatency = 1\n[[link]]\n"
                   "between = [\"edge0\", \"cloud0\"]\nlatency = 2\n",
               "c.toml:27", "duplicate link (the same pair is given at line 24)");
  expect_error(
      b + "[[node]]\nname = \"cloud1\"\nregion = \"edge\"\ndevices = [{ kind = \"T4\" }]\n",
      "c.toml:25", "duplicate name 'cloud1' (first used at line 17)");
  expect_error(b + "[[region]]\nname = \"edge\"\ntier = \"edge\"\n", "c.toml:25",
               "duplicate name 'edge'");
  expect_error(b + "[[node]]\nname = \"x\"\nregion = \"fog\"\ndevices = [{ kind = \"T4\" }]\n",
               "c.toml:26", "node 'x' is in unknown region 'fog' (regions: cloud, edge)");
  expect_error(b + "[[region]]\nname = \"r\"\ntier = \"fog\"\n", "c.toml:26", "unknown tier 'fog'");
  expect_error(b + "[[node]]\nname = \"x\"\nregion = \"edge\"\ndevices = [{ kind = \"T4\", "
                   "count = 0 }]\n",
               "c.toml:27", "count must be in 1..65536");
  expect_error("colour = \"blue\"\n" + b, "c.toml:1", "unknown key 'colour' in the cluster file");
  expect_error(b + "[links.same_node]\nbandwidth = \"1Gbps\"\n", "c.toml:24",
               ""); // TOML redefinition
  expect_error(b + "[[node]]\nname = \"x\"\nregion = \"edge\"\ndevices = [{ kind = \"T4\", "
                   "memory = \"lots\" }]\n",
               "c.toml:27", "memory 'lots' is not understood");
  expect_error(
      "[[region]]\nname = \"r\"\ntier = \"cloud\"\n[[node]]\nname = \"n\"\nregion = \"r\"\n"
      "devices = []\n",
      "c.toml:7", "must be a non-empty array");
  expect_error("[[region]\n", "c.toml:1", "");
}

BOOST_AUTO_TEST_CASE(missing_file_is_an_input_error) {
  try {
    load_cluster("/nonexistent/c.toml");
    BOOST_FAIL("no error");
  } catch (const input_error& e) {
    BOOST_TEST(std::string(e.what()) == "/nonexistent/c.toml: cannot read the cluster file");
  }
}

BOOST_AUTO_TEST_SUITE_END()
