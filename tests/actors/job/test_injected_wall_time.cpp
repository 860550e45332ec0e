// Injection in wall time: a script's device slowdown holds each op of the device's stage
// back by (factor - 1) times what it took, from the step it names on (the coordinator puts
// it in force when that step really starts), and a node stop holds
// its stages' ops until the resume, as virtual time has its devices work; the losses do not
// change, and a killed node stops the job with one line.
#include "tests/actors/actor_test_util.hpp"

#include "runtime/base/statistics.hpp"
#include "runtime/io/link_timeline_toml.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

constexpr actors::run_mode wall{runtime::time_mode::wall, false, false};

/// Two stages, cloud A100 -> edge Jetson (computed for real here, on this host's CPU), on a
/// model large enough that computing dominates a step.
runtime::plan two_stages() {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.model.d_model = 128;
  p.model.context = 128;
  p.micro_batch_size = 4;
  runtime::pipeline_plan a;
  a.micro_batches = 4;
  a.schedule = runtime::schedule_kind::one_f_one_b;
  a.stages = {stage({0}, {4}, 0, 2), stage({4}, {4}, 2, 4)};
  p.pipelines = {a};
  return p;
}

std::vector<actors::step_result> run(const runtime::plan& plan, const std::string& script_text,
                                     int steps) {
  const auto c = test_cluster();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(script_text, c, "script.toml");
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::seconds(60), wall, script);
  std::vector<actors::step_result> out;
  for (int k = 0; k < steps; ++k)
    out.push_back(job.step());
  return out;
}

/// The shortest op of kind `kind` of flat stage `s` in steps [first, last] (1-based): the
/// host's load only ever adds time, so the shortest of many is what the op costs (and what
/// a 3x slowdown triples).
double shortest_op(const std::vector<actors::step_result>& steps, int s, int kind, int first,
                   int last) {
  double out = 1e9;
  for (int k = first; k <= last; ++k) {
    const auto& r = steps.at(static_cast<size_t>(k - 1));
    for (size_t i = 0; i < r.ops.size(); ++i)
      if (r.op_stage[i] == s && r.ops[i].kind == kind)
        out = std::min(out, r.ops[i].end - r.ops[i].start);
  }
  return out;
}

/// The shortest step in [first, last].
double shortest_step(const std::vector<actors::step_result>& steps, int first, int last) {
  double out = 1e9;
  for (int k = first; k <= last; ++k)
    out = std::min(out, steps.at(static_cast<size_t>(k - 1)).end_s -
                            steps.at(static_cast<size_t>(k - 1)).start_s);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(injected_wall_time)

BOOST_AUTO_TEST_CASE(a_slowed_device_slows_its_stage_from_the_step_on) {
  // The edge Jetson (stage 1) works 3x slower from step 6 on.
  const auto plan = two_stages();
  constexpr int steps = 10;
  const auto calm = run(plan, "", steps);
  const auto slowed = run(plan, "[[device]]\nstep = 6\ndevice = \"e0/0\"\nslowdown = 3\n", steps);
  for (size_t k = 0; k < calm.size(); ++k)
    BOOST_CHECK_EQUAL(slowed[k].loss, calm[k].loss);
  // The coordinator put the event in force when step 6 really started (on the job's real
  // clock), before its first op: the stages resolve nothing themselves.
  for (const auto& r : slowed) {
    BOOST_TEST_REQUIRE(r.injected.size() == (r.step == 6 ? 1u : 0u), "step " << r.step);
    if (r.step != 6)
      continue;
    double first_op = r.end_s;
    for (const auto& op : r.ops)
      first_op = std::min(first_op, op.start);
    const auto& events = r.injected.front().script.device_changes();
    BOOST_TEST_REQUIRE(events.size() == 1u);
    BOOST_TEST(events[0].at_s >= r.start_s);
    BOOST_TEST(events[0].at_s <= first_op);
  }
  // The same op may run at two paces on this host for whole steps at a time (and the host's
  // load adds to either), so each op kind's pace without the slowdown is bounded by the
  // shortest of the calm run and of steps 1-5 (the faster pace) and the longer of those two
  // (the slower one): from step 6, stage 1's ops take about 3x that, stage 0's do not grow.
  double control_before = 0, control_after = 0;
  for (int kind = 0; kind < 3; ++kind) { // F, B, W
    const double calm1 = shortest_op(calm, 1, kind, 1, steps);
    const double before1 = shortest_op(slowed, 1, kind, 1, 5);
    const double after1 = shortest_op(slowed, 1, kind, 6, steps);
    const double calm0 = shortest_op(calm, 0, kind, 1, steps);
    const double before0 = shortest_op(slowed, 0, kind, 1, 5);
    const double after0 = shortest_op(slowed, 0, kind, 6, steps);
    BOOST_TEST_MESSAGE("op kind " << kind << ": stage 1 " << calm1 * 1e3 << " ms calm, "
                                  << before1 * 1e3 << " -> " << after1 * 1e3 << " ms; stage 0 "
                                  << calm0 * 1e3 << " ms calm, " << before0 * 1e3 << " -> "
                                  << after0 * 1e3 << " ms");
    BOOST_CHECK_GT(after1, 2.2 * std::min(calm1, before1));
    // The hold stretches the op's whole round trip through the device group (its answer
    // and, for F on the last stage, the loss) 3x, which the calm op's span does not carry
    // all of: F reads 4.6-5x. The host's load in steps 6-10 slows both stages alike, so
    // stage 0's growth over the same steps widens the bound, which still catches a
    // slowdown applied twice (9x).
    const double load = std::max(1.0, after0 / std::min(calm0, before0));
    BOOST_CHECK_LT(after1, 6.5 * load * std::max(calm1, before1));
    BOOST_CHECK_LT(after0, 1.8 * std::max(calm0, before0));
    control_before += before0;
    control_after += after0;
  }
  // The held time lies inside the step: stage 1's device runs its ops one after another, so
  // each slowed step lasts at least their sum. How much the step grows is told, not
  // asserted: much of a step here is the actors' own waiting, which a held op overlaps, and
  // the host's load moves the steps by more than the ops' growth.
  for (int k = 6; k <= steps; ++k) {
    const auto& r = slowed.at(static_cast<size_t>(k - 1));
    double stage1_busy = 0;
    for (size_t i = 0; i < r.ops.size(); ++i)
      if (r.op_stage[i] == 1)
        stage1_busy += r.ops[i].end - r.ops[i].start;
    BOOST_CHECK_GE(r.end_s - r.start_s, stage1_busy);
  }
  const double before = shortest_step(slowed, 2, 5), after = shortest_step(slowed, 6, steps);
  BOOST_TEST_MESSAGE("shortest step " << before * 1e3 << " -> " << after * 1e3
                                      << " ms (stage 0's ops " << control_before * 1e3 << " -> "
                                      << control_after * 1e3 << " ms)");
}

BOOST_AUTO_TEST_CASE(a_stopped_node_holds_its_stages_until_it_resumes) {
  // The edge node stops from the job's start until 1.5 s: stage 1's first op ends after it.
  const auto steps = run(two_stages(),
                         "[[node]]\nat = 0\nnode = \"e0\"\naction = \"stop\"\n"
                         "[[node]]\nat = 1.5\nnode = \"e0\"\naction = \"resume\"\n",
                         3);
  double first_end = 1e9;
  for (size_t i = 0; i < steps[0].ops.size(); ++i)
    if (steps[0].op_stage[i] == 1)
      first_end = std::min(first_end, steps[0].ops[i].end);
  BOOST_TEST_MESSAGE("stage 1's first op ended at " << first_end << " s; step 2 took "
                                                    << steps[1].end_s - steps[1].start_s << " s");
  BOOST_CHECK_GE(first_end, 1.5);
  BOOST_CHECK_GE(steps[0].end_s, 1.5);
  // Resumed, the node works at its own pace again.
  BOOST_CHECK_LT(steps[1].end_s - steps[1].start_s, 1.0);
}

BOOST_AUTO_TEST_CASE(a_killed_node_with_the_only_copy_of_layers_stops_a_wall_time_job) {
  const auto plan = two_stages();
  const auto c = test_cluster();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(
      "[[node]]\nstep = 2\nnode = \"e0\"\naction = \"kill\"\n", c, "kill.toml");
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, 3), test_corpus(),
                        std::chrono::seconds(20), wall, script);
  job.step();
  try {
    job.step();
    BOOST_ERROR("a step ran on a killed node");
  } catch (const std::exception& e) {
    BOOST_TEST_MESSAGE("failed with: " << e.what());
    BOOST_TEST(std::string(e.what()).find("node e0 lost (killed at") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("no other node held layer") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
