// Peer snapshots: which stages snapshot and where, how often, which snapshot is complete,
// and where a rollback takes each layer from.
#include <boost/test/unit_test.hpp>

#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/snapshot_plan.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <vector>

using namespace deepcee::runtime;
using deepcee::test::four_pipes_job;

namespace {

/// four_pipes_plan's pipeline 0 alone, its second stage moved to node 1 (device 3).
plan one_pipeline_on_two_nodes(const plan& p) {
  auto one = p;
  one.pipelines.resize(1);
  one.pipelines[0].stages[1].devices = {3};
  return one;
}

double layer_bytes(const model_spec& m, int first, int last) {
  double out = 0;
  for (int l = first; l < last; ++l)
    out += double(m.layers[size_t(l)].param_bytes + m.layers[size_t(l)].optimizer_bytes);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshot_plan_tests)

BOOST_AUTO_TEST_CASE(replicas_on_other_nodes_need_no_snapshot) {
  four_pipes_job j;
  const auto l = plan_snapshots(j.c, j.p);
  BOOST_TEST(l.single_node_layers.empty());
  BOOST_TEST(!l.needed());
}

BOOST_AUTO_TEST_CASE(two_pipelines_on_one_node_hold_their_layers_on_one_node) {
  four_pipes_job j;
  auto p = j.p;
  p.pipelines.resize(2);
  p.pipelines[1].stages[0].devices = {0}; // pipeline 1's first stage joins node 0
  const auto l = plan_snapshots(j.c, p);
  BOOST_TEST(l.single_node_layers == (std::vector<int>{0, 1, 2, 3}));
  BOOST_TEST(l.stages == (std::vector<int>{0, 1}));
  // Stage 0 (node 0) is kept by the next stage on another node: flat 1 is on node 0 too.
  BOOST_TEST(l.keepers == (std::vector<int>{3, 3}));
}

BOOST_AUTO_TEST_CASE(a_pipeline_on_two_nodes_keeps_each_stage_on_the_other) {
  four_pipes_job j;
  const auto l = plan_snapshots(j.c, one_pipeline_on_two_nodes(j.p));
  BOOST_TEST(l.single_node_layers.size() == 8u);
  BOOST_TEST(l.stages == (std::vector<int>{0, 1}));
  BOOST_TEST(l.keepers == (std::vector<int>{1, 0}));
  // Stage actors placed elsewhere count by their node.
  const auto same = plan_snapshots(j.c, one_pipeline_on_two_nodes(j.p), {2, 2});
  BOOST_TEST(!same.needed());
}

BOOST_AUTO_TEST_CASE(a_pipeline_on_one_node_has_nowhere_to_keep_a_snapshot) {
  four_pipes_job j;
  auto p = j.p;
  p.pipelines.resize(1);
  const auto l = plan_snapshots(j.c, p);
  BOOST_TEST(l.single_node_layers.size() == 8u);
  BOOST_TEST(!l.needed());
}

BOOST_AUTO_TEST_CASE(a_snapshot_costs_its_slowest_stage_send) {
  four_pipes_job j;
  const auto p = one_pipeline_on_two_nodes(j.p);
  const auto l = plan_snapshots(j.c, p);
  const auto cost = snapshot_send(j.c, j.model, p, l);
  const double first = layer_bytes(j.model, 0, 4), second = layer_bytes(j.model, 4, 8);
  BOOST_TEST(cost.bytes == first + second);
  const link_timeline none;
  const double want = std::max(transfer_duration(none.history(j.c, 0, 3), 0, first),
                               transfer_duration(none.history(j.c, 3, 0), 0, second));
  BOOST_TEST(cost.seconds == want);
  BOOST_TEST(cost.seconds > 0);
}

BOOST_AUTO_TEST_CASE(the_interval_keeps_the_send_within_five_percent_of_a_step) {
  BOOST_TEST(snapshot_interval(1.0, 10.0) == 2);
  BOOST_TEST(snapshot_interval(0.5, 10.0) == 1);
  BOOST_TEST(snapshot_interval(0.51, 10.0) == 2);
  BOOST_TEST(snapshot_interval(0.0, 10.0) == 1);
  BOOST_TEST(snapshot_interval(3.0, 1.0) == 60);
  BOOST_TEST(snapshot_interval(1.0, 10.0, 0.2) == 1);
  four_pipes_job j;
  const auto p = one_pipeline_on_two_nodes(j.p);
  const double send = snapshot_send(j.c, j.model, p, plan_snapshots(j.c, p)).seconds;
  const int k = snapshot_interval(send, j.step_s);
  BOOST_TEST(send / k <= 0.05 * j.step_s * (1 + 1e-9));
  if (k > 1)
    BOOST_TEST(send / (k - 1) > 0.05 * j.step_s);
}

BOOST_AUTO_TEST_CASE(the_newest_complete_snapshot_leaves_out_the_last_steps_own) {
  // Every 3 steps: step 3's copies arrive during step 4.
  BOOST_TEST(!newest_complete_snapshot(3, 3).has_value());
  BOOST_TEST(newest_complete_snapshot(4, 3).value_or(-1) == 3);
  BOOST_TEST(newest_complete_snapshot(6, 3).value_or(-1) == 3);
  BOOST_TEST(newest_complete_snapshot(7, 3).value_or(-1) == 6);
  BOOST_TEST(newest_complete_snapshot(2, 1).value_or(-1) == 1);
  BOOST_TEST(!newest_complete_snapshot(100, 0).has_value()); // snapshots off
  BOOST_TEST(snapshot_every(4, {1e6, 100.0}, 1.0) == 4);     // the job file's, whatever it costs
  BOOST_TEST(snapshot_every(0, {1e6, 100.0}, 1.0) == 0);
  BOOST_TEST(snapshot_every(-1, {1e6, 1.0}, 10.0) == 2); // auto: 5% of the step
}

BOOST_AUTO_TEST_CASE(a_snapshot_is_complete_once_every_stage_kept_the_same_step) {
  snapshot_ledger ledger(2);
  BOOST_TEST(!ledger.complete());
  ledger.kept(4, 0);
  ledger.kept(8, 1); // another step: no cut yet
  BOOST_TEST(!ledger.complete());
  ledger.kept(4, 1);
  BOOST_TEST(ledger.complete().value_or(-1) == 4);
  ledger.kept(8, 0);
  BOOST_TEST(ledger.complete().value_or(-1) == 8);
  ledger.kept(4, 0); // older than the newest complete one: changes nothing
  ledger.kept(12, 0);
  BOOST_TEST(ledger.complete().value_or(-1) == 8);
  ledger.kept(12, 7); // no such stage
  BOOST_TEST(ledger.complete().value_or(-1) == 8);
}

BOOST_AUTO_TEST_CASE(a_rollback_takes_a_lost_stage_from_its_keeper) {
  four_pipes_job j;
  const auto p = one_pipeline_on_two_nodes(j.p);
  const auto l = plan_snapshots(j.c, p);
  const auto lost = surviving_holders(j.c, p, {1}).lost_stages;
  BOOST_TEST(lost == (std::vector<int>{1}));
  const auto s = snapshot_sources(p, l, lost);
  BOOST_TEST(s.lost_layers.empty());
  BOOST_TEST(s.layer_source == (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0}));
  // The holders say where the state lies: stage 1's copy on its keeper's device.
  BOOST_TEST(s.holders.pipelines.size() == 1u);
  BOOST_TEST(s.holders.pipelines[0].stages[1].devices == std::vector<int>{0});
  // The survivors' plan, split in two on node 0, takes every layer from stage 0.
  auto next = p;
  next.pipelines[0].stages = {{{0}, {4}, 0, 3, compression::none},
                              {{1}, {4}, 3, 8, compression::none}};
  const auto by_stage = sources_by_stage(next, s.layer_source);
  BOOST_TEST(by_stage.size() == 2u);
  BOOST_TEST(by_stage[0] == (std::vector<int>{0, 0, 0}));
  BOOST_TEST(by_stage[1].size() == 5u);
}

BOOST_AUTO_TEST_CASE(a_surviving_stage_rolls_back_to_its_own_copy) {
  four_pipes_job j;
  const auto p = one_pipeline_on_two_nodes(j.p);
  const auto s = snapshot_sources(p, plan_snapshots(j.c, p), {0});
  BOOST_TEST(s.layer_source == (std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1}));
  BOOST_TEST(s.holders.pipelines[0].stages[0].devices == std::vector<int>{3});
}

BOOST_AUTO_TEST_CASE(losing_a_stage_and_its_keeper_loses_its_layers) {
  four_pipes_job j;
  const auto p = one_pipeline_on_two_nodes(j.p);
  const auto s = snapshot_sources(p, plan_snapshots(j.c, p), {0, 1});
  BOOST_TEST(layer_ranges(s.lost_layers) == "layers 0-7");
}

BOOST_AUTO_TEST_CASE(the_line_of_a_lost_job_names_its_newest_checkpoint) {
  BOOST_TEST(!newest_checkpoint(9, 0));
  BOOST_TEST(!newest_checkpoint(4, 5));
  BOOST_TEST(newest_checkpoint(14, 5).value_or(-1) == 10);
  BOOST_TEST(newest_checkpoint(15, 5).value_or(-1) == 15);
  const auto line = cannot_go_on(lost_line("e0", "disconnected"), {2, 3},
                                 "no complete snapshot yet", checkpoint_note(10));
  BOOST_TEST(line == "node e0 lost (disconnected): no other node held layers 2-3, so the job "
                     "cannot go on (no complete snapshot yet); resume it from its newest "
                     "complete checkpoint, step 10's");
  BOOST_TEST(cannot_go_on("x", {1}, "", checkpoint_note(std::nullopt)).find("no checkpoint") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
