#include "runtime/base/errors.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/baselines.hpp"
#include "runtime/planner/partition.hpp"
#include "runtime/planner/planner.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

using namespace deepcee::runtime;

namespace {

struct testbed {
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  profile_table profiles{make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m")};
  cost_cache costs{c, profiles};
  baseline_request request = make_request();

  baseline_request make_request() const {
    baseline_request r;
    r.model_name = "gpt2-124m";
    r.global_batch = 64;
    r.memory_fraction = 0.9;
    r.source = deepcee::test::cluster_file("deepcee-testbed");
    return r;
  }
};

std::set<int> devices_of(const plan& p) {
  std::set<int> s;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      s.insert(st.devices.begin(), st.devices.end());
  return s;
}

int layers_of(const testbed& t) {
  return t.costs.layer_count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(baselines)

BOOST_AUTO_TEST_CASE(split_proportional_keeps_total_minimum_and_ratio) {
  auto s = split_proportional(12, {2.0, 1.0, 1.0});
  BOOST_TEST((s == std::vector<int>{6, 3, 3}));
  auto t = split_proportional(4, {100.0, 1.0, 1.0, 1.0});
  BOOST_TEST((t == std::vector<int>{1, 1, 1, 1}));
  auto u = split_proportional(10, {1.0, 1.0, 1.0});
  BOOST_TEST(u[0] + u[1] + u[2] == 10);
  BOOST_TEST(*std::max_element(u.begin(), u.end()) - *std::min_element(u.begin(), u.end()) <= 1);
  BOOST_CHECK_THROW(split_proportional(2, {1.0, 1.0, 1.0}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(uniform_bounds_are_contiguous_and_even) {
  auto b = uniform_bounds(14, 4);
  BOOST_TEST((b == std::vector<int>{0, 4, 8, 11, 14}));
  BOOST_CHECK_THROW(uniform_bounds(3, 4), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(balanced_split_gives_the_faster_stage_more_layers) {
  testbed t;
  // Stage 0: two RTX 3090 sharing the samples; stage 1: one Jetson with all of them.
  split_request r;
  r.devices = {{0, 1}, {14}};
  r.samples = {{2, 2}, {4}};
  r.in_flight = {2, 1};
  layer_split s = balance_layers(t.costs, r);
  BOOST_TEST(s.bounds.front() == 0);
  BOOST_TEST(s.bounds.back() == layers_of(t));
  BOOST_TEST(s.bounds[1] - s.bounds[0] > s.bounds[2] - s.bounds[1]);
  BOOST_TEST(s.fits);
}

BOOST_AUTO_TEST_CASE(the_split_memo_returns_balance_layers_and_knows_devices_alike) {
  testbed t;
  const int other = static_cast<int>(t.c.devices.size()) - 1; // another kind than device 0
  BOOST_REQUIRE(t.c.devices[size_t(other)].kind != t.c.devices[0].kind);
  BOOST_REQUIRE(t.c.devices[2].kind == t.c.devices[0].kind);
  split_request r;
  r.devices = {{0, 1}, {other}};
  r.samples = {{2, 2}, {4}};
  r.in_flight = {2, 1};
  split_memo memo;
  BOOST_TEST((memo.balance(t.costs, r).bounds == balance_layers(t.costs, r).bounds));
  BOOST_TEST(memo.size() == 1u);
  // Other devices of the same kind, memory and samples: the same request.
  split_request alike = r;
  alike.devices[0] = {2, 3};
  BOOST_TEST((memo.balance(t.costs, alike).bounds == balance_layers(t.costs, r).bounds));
  BOOST_TEST(memo.size() == 1u);
  // Another in-flight count, sample split or memory fraction is another request.
  split_request deeper = r;
  deeper.in_flight = {64, 32};
  split_request uneven = r;
  uneven.samples[0] = {3, 1};
  split_request tight = r;
  tight.memory_fraction = 0.05;
  for (const auto& q : {deeper, uneven, tight}) {
    const layer_split direct = balance_layers(t.costs, q);
    const layer_split& kept = memo.balance(t.costs, q);
    BOOST_TEST((kept.bounds == direct.bounds));
    BOOST_TEST(kept.fits == direct.fits);
  }
  BOOST_TEST(memo.size() == 4u);
}

BOOST_AUTO_TEST_CASE(dp_is_one_stage_over_every_device) {
  testbed t;
  plan p = make_dp_plan(t.costs, t.request);
  validate_plan(p, static_cast<int>(t.c.devices.size()), "dp");
  BOOST_TEST(p.strategy == "dp");
  BOOST_TEST(p.pipelines.size() == 1u);
  BOOST_TEST(p.pipelines[0].stages.size() == 1u);
  BOOST_TEST(p.pipelines[0].stages[0].devices.size() == t.c.devices.size());
  BOOST_TEST(p.global_batch() == 64);
  const auto& s = p.pipelines[0].stages[0].samples;
  BOOST_TEST(*std::max_element(s.begin(), s.end()) - *std::min_element(s.begin(), s.end()) <= 1);
  BOOST_TEST(p.excluded.empty());
}

BOOST_AUTO_TEST_CASE(megatron_and_gpipe_put_one_node_per_stage_with_uniform_layers) {
  testbed t;
  for (bool gpipe : {false, true}) {
    plan p = gpipe ? make_gpipe_plan(t.costs, t.request) : make_megatron_plan(t.costs, t.request);
    validate_plan(p, static_cast<int>(t.c.devices.size()), p.strategy);
    BOOST_TEST(p.pipelines.size() == 1u);
    const auto& pp = p.pipelines[0];
    BOOST_TEST(to_string(pp.schedule) == (gpipe ? "gpipe" : "1f1b"));
    BOOST_TEST(pp.stages.size() == t.c.nodes.size());
    for (size_t s = 0; s < pp.stages.size(); ++s) {
      BOOST_TEST(pp.stages[s].devices == t.c.nodes[s].devices);
      int width = pp.stages[s].last_layer - pp.stages[s].first_layer;
      BOOST_TEST((width == layers_of(t) / 7 || width == layers_of(t) / 7 + 1));
      const auto& smp = pp.stages[s].samples;
      BOOST_TEST(*std::max_element(smp.begin(), smp.end()) -
                     *std::min_element(smp.begin(), smp.end()) <=
                 1);
    }
    BOOST_TEST(p.global_batch() == 64);
  }
}

BOOST_AUTO_TEST_CASE(metis_uses_every_device_with_speed_proportional_shares) {
  testbed t;
  plan p = make_metis_plan(t.costs, t.request);
  validate_plan(p, static_cast<int>(t.c.devices.size()), "metis");
  BOOST_TEST(p.strategy == "metis");
  BOOST_TEST(devices_of(p).size() == t.c.devices.size());
  BOOST_TEST(p.global_batch() == 64);
  for (const auto& pp : p.pipelines) {
    BOOST_TEST(to_string(pp.schedule) == "1f1b");
    for (const auto& st : pp.stages)
      BOOST_TEST(to_string(st.send_compression) == "none");
  }
}

BOOST_AUTO_TEST_CASE(restricted_baselines_use_only_their_groups_devices) {
  testbed t;
  grouping g = planner_grouping(t.c, t.profiles.model());
  BOOST_REQUIRE(g.network.size() > 1u); // the 100 Mbps WAN splits cloud from edge and end
  const network_group& cloud = g.network.front();
  BOOST_REQUIRE(std::count(cloud.devices.begin(), cloud.devices.end(), 0) == 1);
  t.request.devices = cloud.devices;
  t.request.restricted_to = network_group_name(t.c, cloud);
  const std::set<int> mine(cloud.devices.begin(), cloud.devices.end());
  for (auto make : {make_dp_plan, make_gpipe_plan, make_megatron_plan, make_metis_plan}) {
    plan p = make(t.costs, t.request);
    BOOST_TEST_CONTEXT(p.strategy) {
      validate_plan(p, static_cast<int>(t.c.devices.size()), p.strategy);
      BOOST_TEST(p.global_batch() == 64);
      std::set<int> used = devices_of(p);
      BOOST_TEST(std::includes(mine.begin(), mine.end(), used.begin(), used.end()));
      // None of these baselines leaves a device of its own group out.
      BOOST_TEST(used.size() == mine.size());
      BOOST_TEST(p.excluded.size() == t.c.devices.size() - mine.size());
      for (const auto& e : p.excluded) {
        BOOST_TEST(!mine.count(e.device));
        BOOST_TEST(e.reason == "baseline restricted to group " + t.request.restricted_to);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_batch_too_small_for_dp_is_an_input_error) {
  testbed t;
  t.request.global_batch = 7; // 15 devices cannot each get a sample
  BOOST_CHECK_THROW(make_dp_plan(t.costs, t.request), input_error);
}

BOOST_AUTO_TEST_SUITE_END()
