#include "runtime/cluster/network_path.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/sim/simulator.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <limits>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// One region of two nodes with `per_node` A100-80GB each; inter-node links {alpha, bw}.
cluster two_nodes(int per_node, double alpha, double bw) {
  const auto spec = *find_device_kind("A100-80GB");
  cluster c;
  c.name = "two-nodes";
  c.links = {{0, inf}, {alpha, bw}, {0, inf}};
  c.regions.push_back({"r", region_tier::cloud});
  for (int n = 0; n < 2; ++n) {
    node nd;
    nd.name = "n" + std::to_string(n);
    for (int k = 0; k < per_node; ++k) {
      device d;
      d.id = static_cast<int>(c.devices.size());
      d.name = nd.name + "/" + std::to_string(k);
      d.kind = spec.kind;
      d.cls = spec.cls;
      d.node = n;
      d.memory_bytes = spec.memory_bytes;
      d.fp32_flops = spec.fp32_flops;
      d.bf16_flops = spec.bf16_flops;
      d.mem_bandwidth_Bps = spec.mem_bandwidth_Bps;
      nd.devices.push_back(d.id);
      c.devices.push_back(d);
    }
    c.nodes.push_back(nd);
  }
  return c;
}

/// `pipelines` pipelines of two stages; pipeline i runs stage 0 on devices[0][i] and stage 1
/// on devices[1][i], the layers cut at `cut`.
plan two_stage_pipelines(const model_config& m, const std::vector<std::vector<int>>& devices,
                         int pipelines, int cut, int micro_batch, int micro_batches,
                         schedule_kind kind) {
  plan p;
  p.strategy = "test";
  p.model = m;
  p.micro_batch_size = micro_batch;
  for (int i = 0; i < pipelines; ++i) {
    pipeline_plan pp;
    pp.micro_batches = micro_batches;
    pp.schedule = kind;
    for (int s = 0; s < 2; ++s) {
      stage_plan st;
      st.devices = {devices[static_cast<size_t>(s)][static_cast<size_t>(i)]};
      st.samples = {micro_batch};
      st.first_layer = s == 0 ? 0 : cut;
      st.last_layer = s == 0 ? cut : m.n_layer + 2;
      pp.stages.push_back(st);
    }
    p.pipelines.push_back(pp);
  }
  return p;
}

struct fixture {
  model_config config{6, 256, 4, 128, 512};
  model_spec spec = make_model_spec(config, "t");
  profile_table profile{spec};
};

} // namespace

BOOST_AUTO_TEST_SUITE(network_sharing)

BOOST_AUTO_TEST_CASE(a_transfer_crosses_both_interfaces_and_the_wan_path_between_regions) {
  auto c = two_nodes(2, 1e-3, 1e9);
  BOOST_TEST(path_between(c, 0, 0).empty());
  const auto inside = path_between(c, 0, 1);
  BOOST_REQUIRE_EQUAL(inside.size(), 1u);
  BOOST_TEST((inside[0] == net_resource{net_resource::kind::node_bus, 0, 1}));
  const auto across = path_between(c, 1, 2);
  BOOST_TEST((across == std::vector<net_resource>{{net_resource::kind::nic_out, 0, 0},
                                                  {net_resource::kind::nic_in, 1, 0}}));
  c.regions.push_back({"r2", region_tier::edge});
  c.nodes[1].region = 1;
  for (int d : c.nodes[1].devices)
    c.devices[static_cast<size_t>(d)].region = 1;
  BOOST_TEST(
      (path_between(c, 3, 0) == std::vector<net_resource>{{net_resource::kind::nic_out, 1, 0},
                                                          {net_resource::kind::wan, 1, 0},
                                                          {net_resource::kind::nic_in, 0, 0}}));
  BOOST_TEST(nic_cap_between(c, 0, 2) == inf);
  c.nodes[1].nic_Bps = 5e8;
  BOOST_TEST(nic_cap_between(c, 0, 2) == 5e8);
  BOOST_TEST(nic_cap_between(c, 2, 3) == inf); // inside a node: no interface
}

BOOST_FIXTURE_TEST_CASE(pipelines_crossing_one_interface_share_it, fixture) {
  // N pipelines send their one activation from node 0 to node 1 at the same moment: the
  // last arrives after N drains, not after one.
  const double alpha = 2e-3, bw = 1e8;
  const auto c = two_nodes(4, alpha, bw);
  const int cut = 3;
  const double bytes = double(spec.transfer_bytes(2, compression::none));
  for (int n : {1, 2, 4}) {
    const auto p = two_stage_pipelines(config, {{0, 1, 2, 3}, {4, 5, 6, 7}}, n, cut, 2, 1,
                                       schedule_kind::gpipe);
    const auto costs = pipeline_stage_costs(c, profile, p, 0);
    const auto r = simulate(c, spec, profile, p);
    double last = 0;
    for (int i = 0; i < n; ++i)
      last = std::max(last, r.stages[static_cast<size_t>(i)][1].compute_end_s);
    BOOST_TEST_INFO("pipelines " << n);
    // Each step begins with the first stages' optimizer steps (on the coordinator's node).
    BOOST_TEST(last == profile.optimizer_s(c.devices[0], 0, cut) + costs[0].f + alpha +
                           n * bytes / bw + costs[1].f + costs[1].b + costs[1].w,
               tt::tolerance(1e-9));
  }
}

BOOST_FIXTURE_TEST_CASE(an_interface_slower_than_the_link_caps_the_transfer, fixture) {
  const double alpha = 2e-3, bw = 1e8;
  auto c = two_nodes(1, alpha, bw);
  c.nodes[1].nic_Bps = bw / 4;
  const auto p = two_stage_pipelines(config, {{0}, {1}}, 1, 3, 2, 1, schedule_kind::gpipe);
  const auto costs = pipeline_stage_costs(c, profile, p, 0);
  const double bytes = double(spec.transfer_bytes(2, compression::none));
  BOOST_TEST(costs[0].comm_to_next == alpha + bytes / (bw / 4), tt::tolerance(1e-12));
  const auto r = simulate(c, spec, profile, p);
  BOOST_TEST(r.stages[0][1].compute_end_s == profile.optimizer_s(c.devices[0], 0, 3) + costs[0].f +
                                                 alpha + bytes / (bw / 4) + costs[1].f +
                                                 costs[1].b + costs[1].w,
             tt::tolerance(1e-9));
}

BOOST_FIXTURE_TEST_CASE(an_all_reduce_between_two_nodes_uses_each_direction_once, fixture) {
  // Data parallelism over one device of each node: the ring's two hops go out of one node
  // and into the other each, so with full-duplex interfaces each hop has its link to itself:
  // 2(n-1)/n * bytes / bw + 2(n-1) * alpha with n = 2. Then the interfaces, not the device
  // pairs, are what it occupies: its sharing group spans both transfers' directions.
  const double alpha = 1e-3, bw = 1e8;
  const auto c = two_nodes(1, alpha, bw);
  plan p;
  p.strategy = "test";
  p.model = config;
  p.micro_batch_size = 2;
  for (int d : {0, 1}) {
    pipeline_plan pp;
    pp.micro_batches = 1;
    pp.schedule = schedule_kind::one_f_one_b;
    pp.stages.push_back({{d}, {2}, 0, config.n_layer + 2});
    p.pipelines.push_back(pp);
  }
  double grad = 0;
  for (const auto& layer : spec.layers)
    grad += double(layer.grad_bytes);
  const auto r = simulate(c, spec, profile, p);
  for (const auto& d : r.devices)
    BOOST_TEST(d.allreduce_s == grad / bw + 2 * alpha, tt::tolerance(1e-9));
}

BOOST_FIXTURE_TEST_CASE(region_labels_do_not_change_the_step, fixture) {
  // The 500 Mbps testbed, and the same with the second cloud node labelled as a region of
  // its own: every link keeps its figures (same_region = cross_region there), so the same
  // plan over the two cloud nodes must simulate at the same step time. Before the network
  // model shared node interfaces, the first label gave each device pair its own 500 Mbps.
  const auto c = load_cluster(deepcee::test::cluster_file("deepcee-testbed-500mbps"));
  BOOST_REQUIRE(c.links.same_region == c.links.cross_region);
  auto relabelled = c;
  relabelled.regions.push_back({"cloud-b", region_tier::cloud});
  const int second = *c.find_node("cloud1");
  relabelled.nodes[static_cast<size_t>(second)].region = static_cast<int>(c.regions.size());
  for (int d : relabelled.nodes[static_cast<size_t>(second)].devices)
    relabelled.devices[static_cast<size_t>(d)].region = static_cast<int>(c.regions.size());
  const auto& a = c.nodes[static_cast<size_t>(*c.find_node("cloud0"))].devices;
  const auto& b = c.nodes[static_cast<size_t>(second)].devices;
  const model_config gpt2 = *model_preset("gpt2-124m");
  const auto spec2 = make_model_spec(gpt2, "gpt2");
  const profile_table profile2(spec2);
  for (auto kind : {schedule_kind::one_f_one_b, schedule_kind::zb_h1}) {
    const auto p = two_stage_pipelines(gpt2, {a, b}, 4, 7, 2, 4, kind);
    const auto one = simulate(c, spec2, profile2, p);
    const auto two = simulate(relabelled, spec2, profile2, p);
    BOOST_TEST_INFO("schedule " << to_string(kind));
    BOOST_TEST(one.step_time_s == two.step_time_s, tt::tolerance(1e-12));
    // Four pipelines over one interface take longer than one alone would.
    const auto alone =
        simulate(c, spec2, profile2, two_stage_pipelines(gpt2, {a, b}, 1, 7, 2, 4, kind));
    BOOST_TEST(one.step_time_s > alone.step_time_s * 1.5);
  }
}

BOOST_AUTO_TEST_SUITE_END()
