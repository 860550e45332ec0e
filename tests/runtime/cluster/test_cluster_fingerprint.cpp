// The fingerprint the nodes of a multi-process job compare: blind to each node's address,
// sensitive to everything the job computes with.
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/cluster_fingerprint.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace deepcee::runtime;

namespace {

std::string two_nodes(const std::string& edge_kind, const std::string& extra = "") {
  return R"(name = "fp"
[links]
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
host = "10.0.0.1"
port = 45001
devices = [{ kind = "A100-80GB", count = 2 }]
[[node]]
name = "e0"
region = "edge"
devices = [{ kind = ")" +
         edge_kind + R"(" }]
)" + extra;
}

std::string fingerprint_of(const std::string& text) {
  return cluster_fingerprint(parse_cluster(text, "fp.toml"));
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_fingerprint_suite)

BOOST_AUTO_TEST_CASE(addresses_do_not_count_what_is_computed_with_does) {
  const auto base = fingerprint_of(two_nodes("T4"));
  BOOST_TEST(base.size() == 16u);
  BOOST_TEST(base == fingerprint_of(two_nodes("T4")));
  auto moved = parse_cluster(two_nodes("T4"), "fp.toml");
  moved.nodes[0].host = "192.168.1.7";
  moved.nodes[0].port = 50000;
  moved.name = "renamed";
  BOOST_TEST(cluster_fingerprint(moved) == base);

  BOOST_TEST(fingerprint_of(two_nodes("Jetson-AGX-Orin")) != base);
  BOOST_TEST(fingerprint_of(two_nodes("T4", R"([[link]]
between = ["c0", "e0"]
bandwidth = "50Mbps"
)")) != base);
  auto slower = parse_cluster(two_nodes("T4"), "fp.toml");
  slower.links.cross_region.bandwidth_Bps *= 1.0 + 1e-15; // the last bits count
  BOOST_TEST(cluster_fingerprint(slower) != base);
  auto renamed_node = parse_cluster(two_nodes("T4"), "fp.toml");
  renamed_node.nodes[1].name = "e1";
  BOOST_TEST(cluster_fingerprint(renamed_node) != base);
}

BOOST_AUTO_TEST_SUITE_END()
