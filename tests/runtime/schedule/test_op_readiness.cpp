#include "runtime/schedule/op_readiness.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>

using namespace deepcee::runtime;

namespace {

const op_kind F = op_kind::forward, B = op_kind::backward_input, W = op_kind::backward_weight;
constexpr double not_yet = stage_readiness::not_yet;

} // namespace

BOOST_AUTO_TEST_SUITE(op_readiness)

BOOST_AUTO_TEST_CASE(inputs_follow_the_place_in_the_pipeline) {
  const stage_place first{true, false, false}, middle{}, last{false, true, false};
  BOOST_CHECK(input_of(F, first) == op_input::none);
  BOOST_CHECK(input_of(F, middle) == op_input::activation);
  BOOST_CHECK(input_of(B, middle) == op_input::gradient);
  BOOST_CHECK(input_of(B, last) == op_input::own_forward);
  BOOST_CHECK(input_of(W, first) == op_input::own_backward);
  // A one-stage pipeline reads its data and computes its loss itself.
  const stage_place alone{true, true, false};
  BOOST_CHECK(input_of(F, alone) == op_input::none);
  BOOST_CHECK(input_of(B, alone) == op_input::own_forward);
}

BOOST_AUTO_TEST_CASE(a_fused_backward_releases_its_gradient_when_w_ends) {
  const stage_place split{}, fused{false, false, true};
  BOOST_CHECK(output_of(B, fused) == tensor_flow::gradient_to_previous);
  BOOST_CHECK(released_by(B, split) == tensor_flow::gradient_to_previous);
  BOOST_CHECK(released_by(W, split) == tensor_flow::none);
  BOOST_CHECK(released_by(B, fused) == tensor_flow::none);
  BOOST_CHECK(released_by(W, fused) == tensor_flow::gradient_to_previous);
  BOOST_CHECK(released_by(F, split) == tensor_flow::activation_to_next);
  // Edges send one way only.
  BOOST_CHECK(released_by(F, {false, true, false}) == tensor_flow::none);
  BOOST_CHECK(released_by(W, {true, false, true}) == tensor_flow::none);
  BOOST_CHECK(sender_of(op_input::gradient, true) == W);
  BOOST_CHECK(sender_of(op_input::gradient, false) == B);
  BOOST_CHECK(sender_of(op_input::activation, true) == F);
  BOOST_CHECK_THROW(sender_of(op_input::none, false), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(ops_become_ready_as_inputs_arrive_and_own_ops_end) {
  stage_readiness middle({}, 2, 5.0);
  BOOST_CHECK_EQUAL(middle.ready_at({F, 0}), not_yet);
  middle.input_arrived(op_input::activation, 0, 7.5);
  BOOST_CHECK_EQUAL(middle.ready_at({F, 0}), 7.5);
  BOOST_CHECK(!middle.ready({F, 1}));
  BOOST_CHECK(middle.op_ended({F, 0}, 8.0) == tensor_flow::activation_to_next);
  BOOST_CHECK(!middle.ready({B, 0})); // waits for the next stage's gradient
  middle.input_arrived(op_input::gradient, 0, 9.0);
  BOOST_CHECK_EQUAL(middle.ready_at({B, 0}), 9.0);
  BOOST_CHECK(!middle.ready({W, 0}));
  middle.op_ended({B, 0}, 10.0);
  BOOST_CHECK_EQUAL(middle.ready_at({W, 0}), 10.0);

  stage_readiness first({true, false, false}, 2, 5.0);
  BOOST_CHECK_EQUAL(first.ready_at({F, 1}), 5.0); // the data is there from the start
  BOOST_CHECK_THROW(first.input_arrived(op_input::activation, 0, 1.0), std::invalid_argument);

  stage_readiness last({false, true, false}, 1, 0.0);
  BOOST_CHECK_THROW(last.input_arrived(op_input::gradient, 0, 1.0), std::invalid_argument);
  last.input_arrived(op_input::activation, 0, 1.0);
  BOOST_CHECK(last.op_ended({F, 0}, 2.0) == tensor_flow::none);
  BOOST_CHECK_EQUAL(last.ready_at({B, 0}), 2.0); // the loss is its own
  BOOST_CHECK_THROW(last.ready_at({F, 1}), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(in_flight_counts_and_memory) {
  stage_readiness r({true, false, false}, 3, 0.0);
  r.op_ended({F, 0}, 1.0);
  r.op_ended({F, 1}, 2.0);
  r.op_ended({B, 0}, 3.0);
  BOOST_CHECK_EQUAL(r.held().forward_held, 1);
  BOOST_CHECK_EQUAL(r.held().backward_held, 1);
  stage_cost cost;
  cost.activation_bytes = 10;
  cost.weight_grad_bytes = 4;
  BOOST_CHECK_EQUAL(r.held().bytes(cost), 14.0);
  // One more F counts both held F at their larger size: 2 * 10 + 4.
  cost.memory_limit = 24;
  BOOST_CHECK(admits_forward(r.held(), cost));
  cost.memory_limit = 23.9;
  BOOST_CHECK(!admits_forward(r.held(), cost));
  BOOST_CHECK(within_memory(100.0 * (1 + 1e-13), 100.0));
  BOOST_CHECK(!within_memory(100.0 * (1 + 1e-9), 100.0));
}

BOOST_AUTO_TEST_CASE(an_op_list_runs_in_order) {
  const std::vector<schedule_op> ops{{F, 0}, {B, 0}, {W, 0}};
  op_list_run run(ops, {true, true, true}, 1, 0.0);
  BOOST_CHECK(!run.done());
  BOOST_CHECK_EQUAL(run.next_ready_at(), 0.0);
  BOOST_CHECK(run.complete_next(1.0) == tensor_flow::none);
  BOOST_CHECK_EQUAL(run.position(), 1u);
  BOOST_CHECK_EQUAL(run.next_ready_at(), 1.0);
  run.complete_next(2.0);
  BOOST_CHECK_EQUAL(run.next_ready_at(), 2.0);
  run.complete_next(3.0);
  BOOST_CHECK(run.done());
  BOOST_CHECK(op_list_run().done());
  pipeline_schedule schedule{{ops, ops, ops}, true};
  const auto middle = place_in(schedule, 1);
  BOOST_CHECK(!middle.first && !middle.last && middle.fused_backward);
  BOOST_CHECK(place_in(schedule, 0).first && place_in(schedule, 2).last);
}

BOOST_AUTO_TEST_SUITE_END()
