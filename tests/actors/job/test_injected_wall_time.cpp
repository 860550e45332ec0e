// Injection in wall time: a script's device slowdown holds each op of the device's stage
// back by (factor - 1) times what it took, from the step it names on, and a node stop holds
// its stages' ops until the resume, as virtual time has its devices work; the losses do not
// change, and a killed node stops the job with one line.
#include "tests/actors/actor_test_util.hpp"

#include "runtime/base/statistics.hpp"
#include "runtime/io/link_timeline_toml.hpp"

#include <boost/test/unit_test.hpp>

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
  p.model.d_model = 64;
  p.model.context = 64;
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

/// The ops of flat stage `s` in steps [first, last] (1-based): their durations, and the
/// median over those steps of the stage's busy time in a step.
struct stage_times {
  double op = 0;   ///< median op duration
  double busy = 0; ///< median sum of op durations per step
  double step = 0; ///< median step duration
};
stage_times times_of(const std::vector<actors::step_result>& steps, int s, int first, int last) {
  std::vector<double> ops, busy, whole;
  for (int k = first; k <= last; ++k) {
    const auto& r = steps.at(static_cast<size_t>(k - 1));
    double sum = 0;
    for (size_t i = 0; i < r.ops.size(); ++i)
      if (r.op_stage[i] == s) {
        ops.push_back(r.ops[i].end - r.ops[i].start);
        sum += ops.back();
      }
    busy.push_back(sum);
    whole.push_back(r.end_s - r.start_s);
  }
  return {runtime::median(ops), runtime::median(busy), runtime::median(whole)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(injected_wall_time)

BOOST_AUTO_TEST_CASE(a_slowed_device_slows_its_stage_from_the_step_on) {
  // The edge Jetson (stage 1) works 3x slower from the script's step 3 (the job's step 4).
  const auto plan = two_stages();
  const auto calm = run(plan, "", 7);
  const auto slowed = run(plan, "[[device]]\nstep = 3\ndevice = \"e0/0\"\nslowdown = 3\n", 7);
  for (size_t k = 0; k < calm.size(); ++k)
    BOOST_CHECK_EQUAL(slowed[k].loss, calm[k].loss);
  // Step 1 warms caches and connections: compare steps 2-3 with steps 4-7.
  const auto before1 = times_of(slowed, 1, 2, 3), after1 = times_of(slowed, 1, 4, 7);
  const auto before0 = times_of(slowed, 0, 2, 3), after0 = times_of(slowed, 0, 4, 7);
  BOOST_TEST_MESSAGE("stage 1 op " << before1.op * 1e3 << " -> " << after1.op * 1e3
                                   << " ms; stage 0 op " << before0.op * 1e3 << " -> "
                                   << after0.op * 1e3 << " ms; step " << before1.step * 1e3
                                   << " -> " << after1.step * 1e3 << " ms");
  // Each op of the slowed stage lasts 3x what it took (the host's noise aside); the other
  // stage's ops do not change.
  BOOST_CHECK_GT(after1.op, 2.0 * before1.op);
  BOOST_CHECK_LT(after1.op, 4.5 * before1.op);
  BOOST_CHECK_LT(after0.op, 1.8 * before0.op);
  // The step waits for the slowed stage: it grows by at least its extra busy time's half
  // (2x its busy time in all, less what the other stage overlaps).
  BOOST_CHECK_GT(after1.step - before1.step, 1.0 * before1.busy);
  // The calm run's steps do not grow.
  BOOST_CHECK_LT(times_of(calm, 1, 4, 7).op, 1.8 * times_of(calm, 1, 2, 3).op);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_holds_its_stages_until_it_resumes) {
  // The edge node stops from the job's start until 1 s: stage 1's first op ends after it.
  const auto steps = run(two_stages(),
                         "[[node]]\nat = 0\nnode = \"e0\"\naction = \"stop\"\n"
                         "[[node]]\nat = 1\nnode = \"e0\"\naction = \"resume\"\n",
                         3);
  double first_end = 1e9;
  for (size_t i = 0; i < steps[0].ops.size(); ++i)
    if (steps[0].op_stage[i] == 1)
      first_end = std::min(first_end, steps[0].ops[i].end);
  BOOST_TEST_MESSAGE("stage 1's first op ended at " << first_end << " s; step 2 took "
                                                    << steps[1].end_s - steps[1].start_s << " s");
  BOOST_CHECK_GE(first_end, 1.0);
  BOOST_CHECK_GE(steps[0].end_s, 1.0);
  // Resumed, the node works at its own pace again.
  BOOST_CHECK_LT(steps[1].end_s - steps[1].start_s, 0.5);
}

BOOST_AUTO_TEST_CASE(a_killed_node_stops_a_wall_time_job_with_one_line) {
  const auto plan = two_stages();
  const auto c = test_cluster();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(
      "[[node]]\nstep = 1\nnode = \"e0\"\naction = \"kill\"\n", c, "kill.toml");
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, 3), test_corpus(),
                        std::chrono::seconds(20), wall, script);
  job.step();
  try {
    job.step();
    BOOST_ERROR("a step ran on a killed node");
  } catch (const std::exception& e) {
    BOOST_TEST_MESSAGE("failed with: " << e.what());
    BOOST_TEST(std::string(e.what()).find("node e0 was killed at") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
