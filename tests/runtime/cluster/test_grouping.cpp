#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/grouping.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>

using namespace deepcee::runtime;

namespace {

/// One micro-batch of GPT-2 124M at the stage boundary: 3.1 MB.
grouping_options gpt2_options() {
  grouping_options o;
  o.transfer_bytes =
      double(make_model_spec(*model_preset("gpt2-124m")).transfer_bytes(1, compression::none));
  return o;
}

std::vector<std::vector<int>> node_sets(const grouping& g) {
  std::vector<std::vector<int>> out;
  for (const auto& n : g.network)
    out.push_back(n.nodes);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(grouping_suite)

BOOST_AUTO_TEST_CASE(three_regions_give_three_network_groups) {
  cluster c = deepcee::test::three_region_cluster();
  grouping g = group_devices(c, gpt2_options());
  BOOST_TEST_MESSAGE(g.rule);
  BOOST_TEST_REQUIRE(g.network.size() == 3u);
  // Ordered by smallest device id; nodes c0 = 0, e0 = 1, c1 = 2, e1 = 3, x0..x2 = 4..6.
  BOOST_TEST(g.network[0].nodes == std::vector<int>({0, 2}));
  BOOST_TEST(g.network[1].nodes == std::vector<int>({1, 3}));
  BOOST_TEST(g.network[2].nodes == std::vector<int>({4, 5, 6}));
  BOOST_TEST(g.network[0].devices == std::vector<int>({0, 1, 2, 3, 6, 7}));
  BOOST_TEST(g.merges.size() == 6u);
  BOOST_TEST(g.merges_applied == 4);
  for (const auto& n : g.network) {
    BOOST_TEST(n.internal_cost_s < n.external_cost_s);
    BOOST_TEST(!n.reason.empty());
  }
  BOOST_TEST(g.rule.find("cut before") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mixed_kinds_split_into_compute_groups) {
  cluster c = deepcee::test::three_region_cluster();
  grouping g = group_devices(c, gpt2_options());
  // Cloud: four A100s (40 and 80 GB have the same speed) before two T4s.
  const auto& cloud = g.network[0].compute;
  BOOST_TEST_REQUIRE(cloud.size() == 2u);
  BOOST_TEST(cloud[0].devices == std::vector<int>({2, 3, 6, 7}));
  BOOST_TEST(cloud[1].devices == std::vector<int>({0, 1}));
  BOOST_TEST(cloud[0].reason.find("2 x A100-40GB + 2 x A100-80GB") != std::string::npos);
  BOOST_TEST(cloud[0].reason.find("more than 1.5x slower") != std::string::npos);
  // Edge: A10 (31.2 TFLOP/s) and T4 (8.1) apart.
  const auto& edge = g.network[1].compute;
  BOOST_TEST_REQUIRE(edge.size() == 2u);
  BOOST_TEST(edge[0].devices == std::vector<int>({4, 5}));
  BOOST_TEST(edge[1].devices == std::vector<int>({8}));
  // End: one kind, one group.
  BOOST_TEST(g.network[2].compute.size() == 1u);
  // A looser ratio joins A10 and T4.
  grouping_options loose = gpt2_options();
  loose.speed_ratio = 4;
  BOOST_TEST(group_devices(c, loose).network[1].compute.size() == 1u);
}

BOOST_AUTO_TEST_CASE(deterministic) {
  cluster c = deepcee::test::three_region_cluster();
  grouping a = group_devices(c, gpt2_options());
  for (int i = 0; i < 3; ++i) {
    grouping b = group_devices(c, gpt2_options());
    BOOST_TEST(node_sets(a) == node_sets(b));
    BOOST_TEST(a.rule == b.rule);
    BOOST_TEST_REQUIRE(a.merges.size() == b.merges.size());
    for (size_t k = 0; k < a.merges.size(); ++k) {
      BOOST_TEST(a.merges[k].left == b.merges[k].left);
      BOOST_TEST(a.merges[k].right == b.merges[k].right);
      BOOST_TEST(a.merges[k].cost_s == b.merges[k].cost_s);
    }
  }
  // Equal costs everywhere: ties go to the smallest indices, in order.
  cluster flat = load_cluster(deepcee::test::clusters_dir() / "deepcee-testbed-500mbps.toml");
  grouping f = group_devices(flat, gpt2_options());
  BOOST_TEST(f.merges[0].left == 0);
  BOOST_TEST(f.merges[0].right == 1);
}

BOOST_AUTO_TEST_CASE(uniform_links_give_one_network_group) {
  cluster c = load_cluster(deepcee::test::clusters_dir() / "deepcee-testbed-500mbps.toml");
  grouping g = group_devices(c, gpt2_options());
  BOOST_TEST(g.network.size() == 1u);
  BOOST_TEST(g.network[0].devices.size() == 15u);
  BOOST_TEST(g.rule.find("one network group") != std::string::npos);
  // RTX 3090 and A10 are within 1.5x; the Orins are not.
  BOOST_TEST(g.network[0].compute.size() == 2u);
}

BOOST_AUTO_TEST_CASE(scenario_groups) {
  cluster a = load_cluster(deepcee::test::clusters_dir() / "deepcee-testbed.toml");
  grouping ga = group_devices(a, gpt2_options());
  // The 100 Mbps links to the cloud separate it; edge and end share >= 1 Gbps.
  BOOST_TEST(node_sets(ga) == std::vector<std::vector<int>>({{0, 1}, {2, 3, 4, 5, 6}}));
  cluster cm = load_cluster(deepcee::test::clusters_dir() / "cee-mixed.toml");
  BOOST_TEST(group_devices(cm, gpt2_options()).network.size() == 3u);
  cluster d = load_cluster(deepcee::test::clusters_dir() / "datacenter-mixed.toml");
  grouping gd = group_devices(d, gpt2_options());
  BOOST_TEST(gd.network.size() == 1u);
  BOOST_TEST(gd.network[0].compute.size() == 2u); // A100 + V100 within 1.5x; T4 apart
  cluster e = load_cluster(deepcee::test::clusters_dir() / "cee-1024.toml");
  grouping ge = group_devices(e, gpt2_options());
  size_t devices = 0;
  for (const auto& n : ge.network)
    devices += n.devices.size();
  BOOST_TEST(devices == 1024u);
  BOOST_TEST(ge.network.size() == 8u); // one per region
  BOOST_TEST_MESSAGE("cee-1024: " << ge.network.size() << " network groups; " << ge.rule);
  // A fixed budget: 50 ms joins everything but the cloud.
  grouping_options budget = gpt2_options();
  budget.fast_cost_s = 0.050;
  BOOST_TEST(group_devices(a, budget).network.size() == 2u);
  budget.fast_cost_s = 0.001;
  BOOST_TEST(group_devices(a, budget).network.size() == 7u);
}

BOOST_AUTO_TEST_SUITE_END()
