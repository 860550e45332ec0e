// How long a device's work takes under the script, when a stage's step begins, and how
// long wall time holds an op back: one rule each for the simulator, virtual time and the
// stage actor.
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/sim/device_time.hpp"
#include "runtime/sim/simulator_world.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

/// Full rate until `at_s`, then `rate` (0 with `killed`: the node is killed then).
std::vector<device_piece> changed_at(double at_s, double rate, bool killed = false) {
  return {{0.0, 1.0, false}, {at_s, rate, killed}};
}

/// A stage of `rates.size()` devices, each doing `work_s` per forward op; node "n<d>".
virtual_stage stage_of(std::vector<std::vector<device_piece>> rates, double work_s) {
  virtual_stage vs;
  for (size_t d = 0; d < rates.size(); ++d) {
    vs.dev_f.push_back(work_s);
    vs.dev_b.push_back(work_s);
    vs.dev_w.push_back(work_s);
    vs.nodes.push_back("n" + std::to_string(d));
  }
  vs.f = vs.b = vs.w = work_s;
  vs.rates = std::move(rates);
  return vs;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_time)

BOOST_AUTO_TEST_CASE(work_lasts_as_the_rates_say_or_the_job_stops) {
  BOOST_TEST(work_duration_or_stop({{0.0, 1.0, false}}, 2.0, 0.5, "n0") == 0.5);
  // 1 s at full rate does half of it; the other half at half rate takes 2 s.
  BOOST_TEST(work_duration_or_stop(changed_at(1.0, 0.5), 0.0, 2.0, "n0") == 3.0,
             tt::tolerance(1e-12));
  try {
    work_duration_or_stop(changed_at(1.0, 0.0, true), 0.0, 2.0, "edge0");
    BOOST_FAIL("work on a killed node never ends");
  } catch (const job_stopped& e) {
    BOOST_TEST(std::string(e.what()) == "node edge0 was killed at 1.000 s: the job stops");
  }
  try {
    work_duration_or_stop(changed_at(0.5, 0.0), 0.0, 2.0, "edge1");
    BOOST_FAIL("work on a node stopped for good never ends");
  } catch (const job_stopped& e) {
    BOOST_TEST(std::string(e.what()) == "node edge1 stopped for good at 0.500 s: the job stops");
  }
  // Work done before the node stops is unaffected.
  BOOST_TEST(work_duration_or_stop(changed_at(1.0, 0.0, true), 0.0, 0.25, "n0") == 0.25);
}

BOOST_AUTO_TEST_CASE(a_step_begins_when_the_start_is_in_and_every_optimizer_is_done) {
  std::vector<double> asked_at;
  const std::vector<double> optimizer{0.003, 0.005, 0.001};
  const double begin = step_begin_s(1.0, 0.002, optimizer.size(), [&](size_t d, double at) {
    asked_at.push_back(at);
    return optimizer[d];
  });
  BOOST_TEST(begin == 1.007, tt::tolerance(1e-12));
  // Each device's optimizer step is timed from the start's arrival.
  BOOST_TEST(asked_at == std::vector<double>(3, 1.0 + 0.002), tt::per_element());
  // No devices, or optimizer steps that take nothing: the step begins on arrival.
  BOOST_TEST(step_begin_s(1.0, 0.002, 0, [](size_t, double) { return 1.0; }) == 1.002);
  BOOST_TEST(step_begin_s(1.0, 0.0, 2, [](size_t, double) { return 0.0; }) == 1.0);
}

BOOST_AUTO_TEST_CASE(the_simulator_and_virtual_time_begin_a_step_alike) {
  // Stage 1 runs on two edge devices across the WAN from the coordinator: its start waits
  // a latency, and its devices' optimizer steps run under the script's slowdown and stop.
  const auto c = deepcee::test::actors_test_cluster();
  plan p;
  p.strategy = "test";
  p.model = model_config{4, 64, 4, 32, 256};
  p.micro_batch_size = 2;
  pipeline_plan pp;
  pp.micro_batches = 2;
  pp.schedule = schedule_kind::one_f_one_b;
  stage_plan first;
  first.devices = {0};
  first.samples = {2};
  first.first_layer = 0;
  first.last_layer = 3;
  stage_plan second;
  second.devices = {4, 5};
  second.samples = {1, 1};
  second.first_layer = 3;
  second.last_layer = 6;
  pp.stages = {first, second};
  p.pipelines.push_back(pp);
  const auto spec = make_model_spec(p.model);
  const profile_table profile(spec);
  const auto script =
      parse_link_timeline("[[device]]\nat = 0.02\ndevice = \"e0/1\"\n"
                          "slowdown = 3\n"
                          "[[node]]\nat = 0.1\nnode = \"e0\"\naction = \"stop\"\n"
                          "[[node]]\nat = 0.3\nnode = \"e0\"\naction = \"resume\"\n",
                          c, "s.toml");
  const virtual_cluster vc(c, spec, profile, p, script);
  const auto world = sim_detail::build_world(c, spec, profile, p, script, {});
  BOOST_REQUIRE_EQUAL(world.stages.size(), 2u);
  for (double t0 : {0.0, 0.019, 0.05, 0.09, 0.2, 0.5}) {
    for (int s = 0; s < 2; ++s) {
      const double simulated = world.step_begin(world.stages[size_t(s)], t0);
      BOOST_TEST(vc.stage(0, s).step_begin(t0) == simulated);
      BOOST_TEST(simulated > t0);
    }
  }
  // Across the WAN the start takes its latency; a step started while the node is stopped
  // begins after the resume.
  BOOST_TEST(vc.stage(0, 1).step_begin(0.0) >= 0.04);
  BOOST_TEST(vc.stage(0, 1).step_begin(0.2) > 0.3);
}

BOOST_AUTO_TEST_CASE(wall_time_holds_an_op_back_as_virtual_time_stretches_it) {
  // Unscripted devices: nothing to hold back.
  BOOST_TEST(held_back_s(stage_of({{{0.0, 1.0, false}}}, 0.1), 1.0, 1.1, false) == 0.0);
  // Half rate from the start: the 0.1 s the op took is half of what it would have taken.
  const auto halved = stage_of({changed_at(0.0, 0.5), {{0.0, 1.0, false}}}, 0.1);
  BOOST_TEST(held_back_s(halved, 1.0, 1.1, false) == 0.1, tt::tolerance(1e-9));
  // The same op in virtual time lasts what it measured plus what wall time holds it back.
  BOOST_TEST(halved.op_duration(op_kind::forward, 1.0) ==
                 0.1 + held_back_s(halved, 1.0, 1.1, false),
             tt::tolerance(1e-12));
  // An answer that came before the op began measured nothing to stretch.
  BOOST_TEST(held_back_s(halved, 1.0, 0.9, false) == 0.0);
  // Shaped wall time: the answer's round trip (2 x 10 ms) is not work, and is not stretched.
  auto apart = halved;
  apart.apart = {{}, {link_timeline::piece{0.0, link_params{0.01, 1e9}}}};
  BOOST_TEST(held_back_s(apart, 1.0, 1.1, true) == 0.08, tt::tolerance(1e-9));
  BOOST_TEST(held_back_s(apart, 1.0, 1.1, false) == 0.1, tt::tolerance(1e-9));
  // A node killed before the work is done stops the job.
  BOOST_CHECK_THROW(held_back_s(stage_of({changed_at(1.05, 0.0, true)}, 0.1), 1.0, 1.1, false),
                    job_stopped);
}

BOOST_AUTO_TEST_SUITE_END()
