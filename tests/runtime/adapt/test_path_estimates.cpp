#include "runtime/adapt/path_estimates.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

/// Three nodes of one device each in one site, every interface 20 Mbps.
cluster three_nodes() {
  return parse_cluster(R"(name = "three"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "20Mbps", latency = "1ms" }
cross_region = { bandwidth = "20Mbps", latency = "1ms" }
[[region]]
name = "site"
tier = "edge"
[[node]]
name = "n"
region = "site"
replicas = 3
nic = "20Mbps"
devices = [{ kind = "Raspberry-Pi-4" }]
)",
                       "three.toml");
}

/// The same with n2's pairs at 10 Mbps.
cluster three_nodes_slow_n2() {
  auto c = three_nodes();
  for (int other : {0, 1}) {
    link_override o;
    o.from = {link_endpoint::scope::node, 2};
    o.to = {link_endpoint::scope::node, other};
    o.bandwidth_Bps = 10e6 / 8;
    o.latency_s = 0.001;
    c.overrides.push_back(o);
  }
  return c;
}

/// One stage per node: device 0 -> 1 -> 2, layers [0,2), [2,4), [4,6).
plan three_stages() {
  plan p;
  p.strategy = "test";
  p.model_name = "custom";
  p.model = model_config{4, 128, 4, 64, 256};
  p.micro_batch_size = 4;
  pipeline_plan pipe;
  pipe.micro_batches = 4;
  pipe.schedule = schedule_kind::one_f_one_b;
  pipe.stages.push_back({{0}, {4}, 0, 2, compression::none});
  pipe.stages.push_back({{1}, {4}, 2, 4, compression::none});
  pipe.stages.push_back({{2}, {4}, 4, 6, compression::none});
  p.pipelines.push_back(pipe);
  return p;
}

/// The same layers on devices 0 and 2 only.
plan two_stages() {
  plan p = three_stages();
  auto& stages = p.pipelines[0].stages;
  stages = {{{0}, {4}, 0, 3, compression::none}, {{2}, {4}, 3, 6, compression::none}};
  return p;
}

link_estimate estimate(const cluster& c, int from, int to, double ratio, bool drifted) {
  link_estimate e;
  e.from = from;
  e.to = to;
  e.assumed = c.link_between(from, to);
  e.estimated = e.assumed;
  e.estimated.bandwidth_Bps *= ratio;
  e.drifted = drifted;
  e.samples = 9;
  return e;
}

/// Feeds `m` a transfer of 1 MB from `from` to `to` at `ratio` of the pair's bandwidth,
/// `n` times.
void feed(environment_monitor& m, const cluster& c, int from, int to, double ratio, int n = 9) {
  const double bytes = 1e6;
  const auto l = c.link_between(from, to);
  for (int k = 0; k < n; ++k) {
    const double start = k;
    const double drained = start + bytes / (l.bandwidth_Bps * ratio);
    m.observe({.from = from,
               .to = to,
               .bytes = bytes,
               .start_s = start,
               .drained_s = drained,
               .arrival_s = drained + l.latency_s});
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(path_estimates_tests)

BOOST_AUTO_TEST_CASE(a_cut_interface_explains_every_pair_to_and_from_its_node) {
  const auto c = three_nodes();
  // n1's interface at a tenth, each way: the pipeline's four pairs drifted.
  const std::vector<link_estimate> links{estimate(c, 0, 1, 0.1, true), estimate(c, 1, 0, 0.1, true),
                                         estimate(c, 1, 2, 0.1, true),
                                         estimate(c, 2, 1, 0.1, true)};
  const auto slow = slow_resources(c, links);
  BOOST_TEST_REQUIRE(slow.size() == 2u);
  for (const auto& s : slow) {
    BOOST_TEST(s.resource.a == 1);
    BOOST_TEST((s.resource.what == net_resource::kind::nic_in ||
                s.resource.what == net_resource::kind::nic_out));
    BOOST_TEST(s.bandwidth_Bps == 0.1 * c.link_between(0, 1).bandwidth_Bps, tt::tolerance(1e-9));
  }
}

BOOST_AUTO_TEST_CASE(a_resource_a_calm_pair_crosses_is_not_slow) {
  const auto c = three_nodes();
  // 0 -> 1 drifted, 0 -> 2 calm: n0's sending side is fine, so n1's receiving side is slow.
  const std::vector<link_estimate> links{estimate(c, 0, 1, 0.1, true),
                                         estimate(c, 0, 2, 1.0, false)};
  const auto slow = slow_resources(c, links);
  BOOST_TEST_REQUIRE(slow.size() == 1u);
  BOOST_TEST((slow[0].resource == net_resource{net_resource::kind::nic_in, 1, 0}));
  // Noise within the band is no drift: nothing slow.
  BOOST_TEST(slow_resources(c, {estimate(c, 0, 1, 0.9, false)}).empty());
}

BOOST_AUTO_TEST_CASE(moves_over_a_cut_path_are_priced_at_its_estimate) {
  const auto c = three_nodes();
  const model_spec model = make_model_spec(three_stages().model);
  const profile_table profile{model};
  environment_monitor m(c, profile, three_stages());
  // The three-stage plan measures 0 <-> 1 and 1 <-> 2; n1's interface is cut 10x.
  for (auto [from, to] : {std::pair{0, 1}, {1, 0}, {1, 2}, {2, 1}})
    feed(m, c, from, to, 0.1);
  const auto priced = move_cluster(m);
  // 2 -> 0 crosses no cut resource; 1 -> 0 is measured. Neither moves.
  BOOST_TEST(priced.link_between(2, 0).bandwidth_Bps == c.link_between(2, 0).bandwidth_Bps,
             tt::tolerance(1e-9));
  BOOST_TEST(priced.link_between(1, 0).bandwidth_Bps == 0.1 * c.link_between(1, 0).bandwidth_Bps,
             tt::tolerance(1e-6));
  // Leaving n1 moves its layers over its cut interface: ten times the nominal price.
  const auto nominal = plan_state_moves(c, model, three_stages(), two_stages());
  const auto estimated = plan_state_moves(priced, model, three_stages(), two_stages());
  BOOST_TEST(estimated.seconds == 10 * nominal.seconds, tt::tolerance(0.01)); // latency apart
  // Coming back to n1 too: 0 -> 1 is measured, and priced at its estimate.
  const auto back = plan_state_moves(priced, model, two_stages(), three_stages());
  BOOST_TEST(back.seconds == 10 * plan_state_moves(c, model, two_stages(), three_stages()).seconds,
             tt::tolerance(0.01));
}

BOOST_AUTO_TEST_CASE(an_unmeasured_pair_across_a_cut_interface_is_priced_at_its_estimate) {
  const auto c = three_nodes();
  const model_spec model = make_model_spec(three_stages().model);
  const profile_table profile{model};
  environment_monitor m(c, profile, two_stages());
  // 0 -> 1 slow; 0 -> 2 and 2 -> 0 calm: n0 sends and n2 sends fine, so n1 receives slowly.
  feed(m, c, 0, 1, 0.1);
  feed(m, c, 0, 2, 1.0);
  feed(m, c, 2, 0, 1.0);
  const auto priced = move_cluster(m);
  const double nominal = c.link_between(2, 1).bandwidth_Bps;
  // No transfer measured 2 -> 1: the monitor's own estimate keeps the cluster's figures,
  // the price of a move takes n1's receiving side at its estimate.
  BOOST_TEST(m.estimated_cluster().link_between(2, 1).bandwidth_Bps == nominal);
  BOOST_TEST(priced.link_between(2, 1).bandwidth_Bps == 0.1 * nominal, tt::tolerance(1e-6));
  // n1's sending side, which no transfer measured, keeps its figures.
  BOOST_TEST(priced.link_between(1, 0).bandwidth_Bps == c.link_between(1, 0).bandwidth_Bps);
  BOOST_TEST(priced.link_between(1, 2).bandwidth_Bps == c.link_between(1, 2).bandwidth_Bps);
  // Coming back to n1 takes layer 3 over 2 -> 1 or 0 -> 1: both slow now, where the
  // estimated cluster alone would price it at the nominal 2 -> 1.
  const auto on_estimates =
      plan_state_moves(m.estimated_cluster(), model, two_stages(), three_stages());
  const auto on_paths = plan_state_moves(priced, model, two_stages(), three_stages());
  BOOST_TEST(on_paths.seconds > 1.5 * on_estimates.seconds);
}

BOOST_AUTO_TEST_CASE(a_pair_across_a_cut_interface_drains_at_its_rate_not_its_ratio) {
  const auto c = three_nodes_slow_n2();
  const model_spec model = make_model_spec(three_stages().model);
  const profile_table profile{model};
  environment_monitor m(c, profile, two_stages());
  // n1 sends at a tenth of its 20 Mbps (1 -> 0 slow; 2 -> 0 calm: n0 receives fine).
  feed(m, c, 1, 0, 0.1);
  feed(m, c, 2, 0, 1.0);
  const auto priced = move_cluster(m);
  // 1 -> 2, a 10 Mbps pair, crosses n1's 2 Mbps sending side: 2 Mbps, not a tenth of 10.
  BOOST_TEST(c.link_between(1, 2).bandwidth_Bps == 10e6 / 8, tt::tolerance(1e-9));
  BOOST_TEST(priced.link_between(1, 2).bandwidth_Bps == 2e6 / 8, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()
