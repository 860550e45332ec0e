// Each stage's compute in a step from its ops' spans: summed per stage in flat order, a
// stage with a device on another node losing that device's round trip from every span.
#include <boost/test/unit_test.hpp>

#include "runtime/adapt/stage_compute.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/support/clusters.hpp"

#include <stdexcept>
#include <vector>

using namespace deepcee::runtime;

namespace {

stage_plan on(std::vector<int> devices, int first, int last) {
  stage_plan s;
  s.samples.assign(devices.size(), 1);
  s.devices = std::move(devices);
  s.first_layer = first;
  s.last_layer = last;
  return s;
}

/// Pipeline 0: stage 0 on device 0 (node c0), stage 1 on devices 1 (c0) and 4 (e0, across
/// the 40 ms WAN); pipeline 1: one stage on device 2.
plan two_pipelines() {
  plan p;
  p.pipelines.resize(2);
  p.pipelines[0].stages = {on({0}, 0, 2), on({1, 4}, 2, 4)};
  p.pipelines[1].stages = {on({2}, 0, 4)};
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(stage_compute_of_ops)

BOOST_AUTO_TEST_CASE(spans_sum_per_stage_less_the_round_trips_of_devices_apart) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto p = two_pipelines();
  const double trip = apart_round_trip_s(c, p.pipelines[0].stages[1]);
  BOOST_TEST(trip == 0.08, boost::test_tools::tolerance(1e-9)); // twice the WAN latency
  BOOST_TEST(apart_round_trip_s(c, p.pipelines[0].stages[0]) == 0.0);

  const std::vector<op_span> ops{
      {.stage = 0, .start_s = 0.0, .end_s = 1.0},   {.stage = 1, .start_s = 1.0, .end_s = 2.0},
      {.stage = 0, .start_s = 1.0, .end_s = 1.5},   {.stage = 1, .start_s = 2.0, .end_s = 2.05},
      {.stage = 2, .start_s = 0.25, .end_s = 2.25},
  };
  const auto compute = stage_compute(c, p, ops);
  BOOST_TEST(compute.size() == 2u);
  BOOST_TEST(compute[0].size() == 2u);
  BOOST_TEST(compute[1].size() == 1u);
  BOOST_TEST(compute[0][0] == 1.5);
  // 1 s less the trip, and a span shorter than the trip counts nothing.
  BOOST_TEST(compute[0][1] == 1.0 - trip, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(compute[1][0] == 2.0);
}

BOOST_AUTO_TEST_CASE(stages_without_ops_compute_nothing) {
  const auto compute = stage_compute(deepcee::test::actors_test_cluster(), two_pipelines(), {});
  BOOST_TEST(compute[0] == (std::vector<double>{0.0, 0.0}), boost::test_tools::per_element());
  BOOST_TEST(compute[1] == (std::vector<double>{0.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_op_of_a_stage_the_plan_lacks_is_refused) {
  const auto c = deepcee::test::actors_test_cluster();
  for (const int32_t stage : {3, -1}) {
    op_span op;
    op.stage = stage;
    BOOST_CHECK_THROW(stage_compute(c, two_pipelines(), {op}), std::out_of_range);
  }
}

BOOST_AUTO_TEST_SUITE_END()
