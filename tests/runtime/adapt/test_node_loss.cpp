// What survives the loss of nodes: the holders left, the layers lost, the cluster without
// them, and the planner's plan for the survivors in the running cluster's numbering.
#include <boost/test/unit_test.hpp>

#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <algorithm>
#include <vector>

using namespace deepcee::runtime;
using deepcee::test::four_pipes_job;

BOOST_AUTO_TEST_SUITE(node_loss_tests)

BOOST_AUTO_TEST_CASE(replicas_keep_every_layer) {
  four_pipes_job j;
  const auto s = surviving_holders(j.c, j.p, {1});
  BOOST_TEST(s.lost_layers.empty());
  BOOST_TEST(s.lost_stages == (std::vector<int>{2, 3}));
  // Pipeline 1 ran on node 1: both its stages are emptied, the others keep their devices.
  BOOST_TEST(s.holders.pipelines[1].stages[0].devices.empty());
  BOOST_TEST(s.holders.pipelines[1].stages[1].devices.empty());
  BOOST_TEST(s.holders.pipelines[0].stages[0].devices == std::vector<int>{0});
  BOOST_TEST(s.holders.pipelines[2].stages[1].devices == std::vector<int>{5});
}

BOOST_AUTO_TEST_CASE(a_stage_held_once_is_lost_with_its_node) {
  four_pipes_job j;
  auto one = j.p;
  one.pipelines.resize(1);
  const auto s = surviving_holders(j.c, one, {0});
  BOOST_TEST(s.lost_layers.size() == 8u);
  BOOST_TEST(layer_ranges(s.lost_layers) == "layers 0-7");
  BOOST_TEST(layer_ranges({3}) == "layer 3");
  BOOST_TEST(layer_ranges({0, 1, 4, 6, 7}) == "layers 0-1, 4 and 6-7");
}

BOOST_AUTO_TEST_CASE(a_stage_whose_actor_ran_on_a_lost_node_is_lost) {
  four_pipes_job j;
  // Stage actors of pipeline 0 placed on node 3, which is lost: pipeline 0's stages go too.
  std::vector<int> stage_node{3, 3, 1, 1, 2, 2, 3, 3};
  const auto s = surviving_holders(j.c, j.p, {3}, stage_node);
  BOOST_TEST(s.holders.pipelines[0].stages[0].devices.empty());
  BOOST_TEST(s.holders.pipelines[3].stages[1].devices.empty());
  BOOST_TEST(!s.holders.pipelines[1].stages[0].devices.empty());
}

BOOST_AUTO_TEST_CASE(the_cluster_without_a_node_is_renumbered) {
  four_pipes_job j;
  const auto part = cluster_without(j.c, {1});
  BOOST_TEST(part.survivors.nodes.size() == 3u);
  BOOST_TEST(part.survivors.devices.size() == 6u);
  BOOST_TEST(part.original_device == (std::vector<int>{0, 1, 4, 5, 6, 7}));
  for (size_t d = 0; d < part.survivors.devices.size(); ++d) {
    const auto& dev = part.survivors.devices[d];
    BOOST_TEST(dev.id == static_cast<int>(d));
    BOOST_TEST(dev.name == j.c.devices[size_t(part.original_device[d])].name);
    const auto& node = part.survivors.nodes.at(size_t(dev.node));
    BOOST_TEST(std::count(node.devices.begin(), node.devices.end(), dev.id) == 1);
  }
  // A link of the survivors is the link the running cluster has between the same devices.
  for (size_t a = 0; a < 6; ++a)
    for (size_t b = 0; b < 6; ++b) {
      const auto x = part.survivors.link_between(int(a), int(b));
      const auto y = j.c.link_between(part.original_device[a], part.original_device[b]);
      BOOST_TEST(x.bandwidth_Bps == y.bandwidth_Bps);
      BOOST_TEST(x.latency_s == y.latency_s);
    }
}

BOOST_AUTO_TEST_CASE(the_survivors_plan_keeps_the_batch_and_avoids_the_lost_node) {
  four_pipes_job j;
  planner_options o;
  o.time_limit_s = -1;
  const auto next = plan_for_survivors(j.c, j.profile, j.p, {2}, o);
  BOOST_TEST(next.global_batch() == j.p.global_batch());
  validate_plan(next, static_cast<int>(j.c.devices.size()), "survivors");
  for (const auto& pipe : next.pipelines)
    for (const auto& st : pipe.stages)
      for (int d : st.devices)
        BOOST_TEST(j.c.devices[size_t(d)].node != 2);
  const auto lost =
      std::count_if(next.excluded.begin(), next.excluded.end(),
                    [](const excluded_device& e) { return e.device == 4 || e.device == 5; });
  BOOST_TEST(lost == 2);
  // Every layer it needs comes from a surviving stage.
  const auto held = surviving_holders(j.c, j.p, {2});
  const auto moves = plan_state_moves(j.c, j.model, held.holders, next);
  for (const auto& m : moves.moves)
    BOOST_TEST(j.c.devices[size_t(m.from_device)].node != 2);
  const auto sources = layer_sources(held.holders, next, moves);
  for (const auto& stage : sources)
    for (int flat : stage)
      BOOST_TEST((flat != 4 && flat != 5)); // pipeline 2's stages, on the lost node
  // It runs: the simulator times it on the running cluster.
  BOOST_TEST(simulate(j.c, j.model, j.profile, next).step_time_s > 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(node_loss_kills)

BOOST_AUTO_TEST_CASE(the_first_kill_of_a_used_node_that_is_not_lost_yet) {
  four_pipes_job j;
  auto kill = [](int node, double at) {
    node_change e;
    e.node = node;
    e.at_s = at;
    e.action = node_action::kill;
    return e;
  };
  node_change stop = kill(0, 0.5);
  stop.action = node_action::stop;
  const link_timeline script({}, {}, {stop, kill(2, 3.0), kill(1, 2.0)});
  BOOST_TEST(first_kill(script, j.c, j.p, {})->node == 1);
  BOOST_TEST(first_kill(script, j.c, j.p, {1})->node == 2);
  BOOST_TEST(!first_kill(script, j.c, j.p, {1, 2}));
  auto two = j.p; // pipelines on nodes 0 and 3 only: the kills hit no node it uses
  two.pipelines = {j.p.pipelines[0], j.p.pipelines[3]};
  BOOST_TEST(!first_kill(script, j.c, two, {}));
}

BOOST_AUTO_TEST_SUITE_END()
