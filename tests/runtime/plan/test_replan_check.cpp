// Whether a running job can switch plans: same model and global batch, a plan that fits the
// cluster, and across node processes only nodes that run some of the job and can spawn.
#include <boost/test/unit_test.hpp>

#include "runtime/base/errors.hpp"
#include "runtime/plan/node_layout.hpp"
#include "runtime/plan/replan_check.hpp"
#include "tests/support/clusters.hpp"

#include <stdexcept>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

stage_plan on(int device, int first, int last) {
  stage_plan s;
  s.devices = {device};
  s.samples = {2};
  s.first_layer = first;
  s.last_layer = last;
  return s;
}

/// Two blocks (layers 0-3) in two stages on devices `a` and `b` of actors_test_cluster
/// (0-3 on node c0, 4-6 on node e0), two samples a micro-batch.
plan two_stages(int a, int b, int micro_batches = 1) {
  plan p;
  p.model = model_config{2, 32, 2, 16, 256};
  p.micro_batch_size = 2;
  p.pipelines.resize(1);
  p.pipelines[0].micro_batches = micro_batches;
  p.pipelines[0].stages = {on(a, 0, 2), on(b, 2, 4)};
  return p;
}

/// The message of what `check` throws as E.
template <class E, class F>
std::string refusal(F check) {
  try {
    check();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(replan_checks)

BOOST_AUTO_TEST_CASE(a_replan_keeps_the_model_and_the_global_batch) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto running = two_stages(0, 1);
  auto wider = two_stages(1, 2);
  wider.model.d_model = 64;
  BOOST_TEST(refusal<std::invalid_argument>([&] { check_replan(running, {}, c, wider, {}); }) ==
             "a re-plan must keep the job's model");
  BOOST_TEST(refusal<std::invalid_argument>([&] {
               check_replan(running, {}, c, two_stages(1, 2, 2), {});
             }) == "a re-plan must keep the global batch 2 (it has 4)");
  BOOST_CHECK_NO_THROW(check_replan(running, {}, c, two_stages(2, 3), {}));
}

BOOST_AUTO_TEST_CASE(a_replan_must_fit_the_cluster) {
  const auto c = deepcee::test::actors_test_cluster();
  BOOST_CHECK_THROW(check_replan(two_stages(0, 1), {}, c, two_stages(0, 9), {}), input_error);
}

BOOST_AUTO_TEST_CASE(in_one_process_any_device_can_take_work) {
  const auto c = deepcee::test::actors_test_cluster();
  BOOST_CHECK_NO_THROW(check_replan(two_stages(0, 1), {}, c, two_stages(4, 5), {}));
}

BOOST_AUTO_TEST_CASE(across_nodes_only_nodes_of_the_job_that_can_spawn_take_work) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto on_c0 = two_stages(0, 1);
  const auto on_both = two_stages(0, 4);
  const std::string e0_refused = "node e0 has not joined the job, so a re-plan cannot give it work";
  // Node e0 runs nothing of a job on c0 alone: it takes work once it joined as a spare (it
  // has a replanner), not before.
  BOOST_TEST(refusal<std::invalid_argument>([&] {
               check_replan(on_c0, layout_of(c, on_c0), c, two_stages(1, 5), {true, false});
             }) == e0_refused);
  BOOST_CHECK_NO_THROW(check_replan(on_c0, layout_of(c, on_c0), c, two_stages(1, 5), {true, true}));
  // It runs some of a job on both, but needs a replanner.
  const auto layout = layout_of(c, on_both);
  BOOST_TEST(refusal<std::invalid_argument>([&] {
               check_replan(on_both, layout, c, two_stages(1, 5), {true, false});
             }) == e0_refused);
  BOOST_TEST(refusal<std::invalid_argument>([&] {
               check_replan(on_both, layout, c, two_stages(1, 5), {true});
             }) == e0_refused);
  BOOST_CHECK_NO_THROW(check_replan(on_both, layout, c, two_stages(1, 5), {true, true}));
  // A node that loses its work needs nothing.
  BOOST_CHECK_NO_THROW(check_replan(on_both, layout, c, two_stages(1, 2), {true, false}));
}

BOOST_AUTO_TEST_SUITE_END()
