// Conservative synchronisation on shared links, as pure logic: the order a shared link
// commits transfers in, the lower bounds a stage promises on its next sends, and which
// links a plan shares.
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/step/link_sharing.hpp"
#include "runtime/step/pipe_order.hpp"
#include "runtime/step/send_bounds.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

using namespace deepcee::runtime;

namespace {

std::vector<uint64_t> drain(pipe_order& o) {
  std::vector<uint64_t> ids;
  while (auto t = o.next())
    ids.push_back(t->id);
  return ids;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_link_order)

BOOST_AUTO_TEST_CASE(commits_by_send_time_whatever_the_arrival_order) {
  pipe_order o({3, 7});
  // Sender 7's transfer at 2.0 reaches the pipe first; sender 3 has promised nothing.
  o.submit(7, {1, 2.0}, 70);
  BOOST_CHECK(!o.next());
  BOOST_CHECK(o.holding_back() == std::vector<int>{3});
  o.submit(3, {1, 1.5}, 30);
  // 3's transfer goes first; 7's still waits: 3 may send again before 2.0.
  BOOST_CHECK(drain(o) == std::vector<uint64_t>{30});
  o.promise(3, {1, 2.5});
  BOOST_CHECK(drain(o) == std::vector<uint64_t>{70});
  BOOST_CHECK_EQUAL(o.queued(), 0u);
}

BOOST_AUTO_TEST_CASE(ties_go_to_the_lower_sender_and_each_sender_keeps_its_order) {
  pipe_order o({1, 2});
  o.submit(2, {1, 1.0}, 20);
  o.submit(2, {1, 1.0}, 21);
  o.promise(1, {1, 1.0}); // 1 may still send at 1.0, and would go first
  BOOST_CHECK(!o.next());
  o.submit(1, {1, 1.0}, 10);
  o.promise(1, {1, 5.0});
  BOOST_CHECK((drain(o) == std::vector<uint64_t>{10, 20, 21}));
  // A promise equal to the head's time from a higher sender lets it through.
  o.submit(1, {1, 6.0}, 11);
  o.promise(2, {1, 6.0});
  BOOST_CHECK(drain(o) == std::vector<uint64_t>{11});
}

BOOST_AUTO_TEST_CASE(a_finished_step_lets_every_transfer_of_it_through) {
  pipe_order o({0, 1});
  o.submit(0, {4, 100.0}, 1);
  BOOST_CHECK(!o.next());
  o.promise(1, {4, never_s}); // sender 1 sends nothing more in step 4
  BOOST_CHECK(drain(o) == std::vector<uint64_t>{1});
  o.submit(0, {5, 101.0}, 2); // step 5 waits for 1's promise about step 5
  BOOST_CHECK(!o.next());
  o.promise(1, {5, 100.5}); // lower bounds never go down: ignored as news
  BOOST_CHECK(!o.next());
  o.promise(1, {5, 101.5});
  BOOST_CHECK(drain(o) == std::vector<uint64_t>{2});
}

BOOST_AUTO_TEST_CASE(promises_cross_processes_as_finite_times_that_order_alike) {
  // CAF 0.17 cannot serialize an infinite double: "done with step 4" goes out as "nothing
  // before step 5", which orders every transfer the same way.
  const auto done = finite_promise({4, never_s});
  BOOST_CHECK(std::isfinite(done.time_s));
  for (double t : {0.0, 1e9, -1e9}) {
    BOOST_CHECK(step_time({4, t}) < done);
    BOOST_CHECK(!(step_time({5, t}) < done));
  }
  BOOST_CHECK(std::isfinite(finite_promise({4, unknown_s}).time_s));
  BOOST_CHECK(finite_promise({4, 2.5}) == step_time({4, 2.5}));
  BOOST_CHECK_EQUAL(arrival_bound(done.time_s, 1.0), unknown_s);
}

BOOST_AUTO_TEST_CASE(a_send_before_its_promise_is_refused) {
  pipe_order o({0, 1});
  o.promise(0, {1, 3.0});
  BOOST_CHECK_THROW(o.submit(0, {1, 2.0}, 1), std::logic_error);
  o.submit(0, {1, 3.0}, 2);
  BOOST_CHECK_THROW(o.submit(0, {1, 2.5}, 3), std::logic_error); // before its own last
  BOOST_CHECK_THROW(o.submit(5, {1, 4.0}, 4), std::invalid_argument);
  BOOST_CHECK_THROW(pipe_order({}), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(send_horizons)

namespace {

const op_kind F = op_kind::forward, B = op_kind::backward_input, W = op_kind::backward_weight;

/// A stage at `place` whose inputs' arrivals are bounded as given (an input per
/// micro-batch, the activations for all but the first stage, the gradients for all but the
/// last).
stage_progress stage_with(const std::vector<schedule_op>& ops, stage_place place,
                          const std::vector<double>& activation_in,
                          const std::vector<double>& gradient_in) {
  stage_progress p;
  p.ops = &ops;
  p.free_at = 10.0;
  p.f = 1.0;
  p.b = 2.0;
  p.w = 0.5;
  p.readiness = stage_readiness(place, static_cast<int>(activation_in.size()), 10.0);
  for (int i = 0; i < static_cast<int>(activation_in.size()); ++i) {
    if (!place.first)
      p.readiness.input_arrived(op_input::activation, i, activation_in[static_cast<size_t>(i)]);
    if (!place.last)
      p.readiness.input_arrived(op_input::gradient, i, gradient_in[static_cast<size_t>(i)]);
  }
  return p;
}

/// A middle stage (sends activations and gradients) with 1F1B-like ops over 2 micro-batches.
stage_progress middle_stage(const std::vector<schedule_op>& ops,
                            const std::vector<double>& activation_in = {unknown_s, unknown_s},
                            const std::vector<double>& gradient_in = {unknown_s, unknown_s}) {
  return stage_with(ops, {}, activation_in, gradient_in);
}

} // namespace

BOOST_AUTO_TEST_CASE(with_exact_inputs_the_bounds_are_the_send_times) {
  const std::vector<schedule_op> ops{{F, 0}, {F, 1}, {B, 0}, {W, 0}, {B, 1}, {W, 1}};
  auto p = middle_stage(ops, {10.5, 12.0}, {20.0, 21.0});
  // F0 10.5-11.5 (sends), F1 12-13, B0 20-22 (sends), W0 22-22.5, B1 22.5-24.5.
  auto b = next_send_bounds(p);
  BOOST_CHECK_EQUAL(b.activation, 11.5);
  BOOST_CHECK_EQUAL(b.gradient, 22.0);
  // After F0 and F1 ran, the next activation is none; the next gradient still B0's.
  p.next_op = 2;
  p.free_at = 13.0;
  b = next_send_bounds(p);
  BOOST_CHECK_EQUAL(b.activation, never_s);
  BOOST_CHECK_EQUAL(b.gradient, 22.0);
  p.next_op = ops.size();
  b = next_send_bounds(p);
  BOOST_CHECK_EQUAL(b.gradient, never_s);
}

BOOST_AUTO_TEST_CASE(unknown_inputs_give_bounds_from_durations_alone) {
  const std::vector<schedule_op> ops{{F, 0}, {F, 1}, {B, 0}, {W, 0}, {B, 1}, {W, 1}};
  auto p = middle_stage(ops);
  auto b = next_send_bounds(p);
  BOOST_CHECK_EQUAL(b.activation, 11.0); // F0 from free_at at the earliest
  BOOST_CHECK_EQUAL(b.gradient, 14.0);   // after F0, F1 and B0's durations
  // A better bound on one input raises the promise, never lowers it.
  p.readiness.input_arrived(op_input::gradient, 0, 30.0);
  BOOST_CHECK_EQUAL(next_send_bounds(p).gradient, 32.0);
}

BOOST_AUTO_TEST_CASE(fused_backward_sends_gradients_when_w_ends_and_edges_send_one_way) {
  const std::vector<schedule_op> ops{{F, 0}, {B, 0}, {W, 0}};
  auto p = stage_with(ops, {.fused_backward = true}, {10.0}, {15.0});
  BOOST_CHECK_EQUAL(next_send_bounds(p).gradient, 17.5);
  p = stage_with(ops, {.last = true}, {10.0}, {15.0}); // the loss gives B's input: B0 after F0
  const auto b = next_send_bounds(p);
  BOOST_CHECK_EQUAL(b.activation, never_s);
  BOOST_CHECK_EQUAL(b.gradient, 13.0);
}

BOOST_AUTO_TEST_CASE(transit_bounds_stay_at_or_below_the_link_model) {
  transfer_part part;
  part.bytes = 1e6;
  part.history = {{0.0, {0.040, 12.5e6}}, {5.0, {0.010, 25e6}}};
  // Smallest latency and largest bandwidth ever: 10 ms + 40 ms.
  BOOST_CHECK_CLOSE(min_transit({part}), 0.050, 1e-9);
  for (double send : {0.0, 1.0, 123.456, 1e5}) {
    const double bound = arrival_bound(send, min_transit({part}));
    BOOST_CHECK_LT(bound, send + 0.050);
    BOOST_CHECK_GT(bound, send + 0.0499);
    link_fifo fifo;
    BOOST_CHECK_LE(bound, fifo.send(part, send).arrival_s);
  }
  BOOST_CHECK_EQUAL(arrival_bound(unknown_s, 1.0), unknown_s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(link_sharing)

BOOST_AUTO_TEST_CASE(the_hybrid_plan_shares_both_directions_of_the_cloud_edge_wan) {
  const auto configs = deepcee::test::configs_dir();
  const auto c = load_cluster(configs / "clusters" / "cee-small.toml");
  const auto p = load_plan(configs / "plans" / "cee-small-hybrid.json");
  const auto spec = make_model_spec(p.model);
  const profile_table profile(spec);
  const virtual_cluster vc(c, spec, profile, p);
  const auto shared = shared_links(vc, p);
  // Flat stages: pipeline 0 = {0 cloud, 1 edge}, pipeline 1 = {2 cloud, 3 edge, 4 end}.
  // Cloud->edge carries the activations of 0 and 2, edge->cloud the gradients of 1 and 3.
  // The edge node's interface joins the rest: what it receives (activations from 0 and 2,
  // gradients from 4) is one group, what it sends (gradients of 1 and 3, activations of 3
  // to the end) the other.
  BOOST_REQUIRE_EQUAL(shared.size(), 2u);
  std::set<std::vector<int>> senders;
  for (const auto& s : shared)
    senders.insert(s.senders);
  BOOST_CHECK((senders == std::set<std::vector<int>>{{0, 2, 4}, {1, 3}}));
  const auto& act = vc.stage(0, 0).act_parts;
  BOOST_REQUIRE_EQUAL(act.size(), 1u);
  BOOST_CHECK(std::any_of(shared.begin(), shared.end(),
                          [&](const shared_link& s) { return s.link == act[0].link; }));
}

BOOST_AUTO_TEST_SUITE_END()
