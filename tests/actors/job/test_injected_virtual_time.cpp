// Injection in virtual time: under a fluctuation and fault script the runtime's step times
// follow `deepcee simulate --timeline` step by step (within 2%), and a killed node stops the
// job with one line.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/adapter_actor.hpp"
#include "actors/protocol/errors.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// What the runtime is compared with: the static plan (`simulate --timeline`), or the
/// adapter's decisions (`simulate --timeline --adaptive`), once the runtime follows them.
enum class follows { static_plan, adaptive };

/// The static comparison runs the job with the adapter's policy off, the adaptive one with
/// it on (re-plans included, as in jobs).
actors::run_mode run_mode_of(follows mode) {
  return {runtime::time_mode::virtual_time, false, mode == follows::adaptive};
}

/// A decision as "step N: kind" (steps from 1, as the runtime counts them).
using decision_list = std::vector<std::string>;

struct prediction {
  std::vector<double> step_s;
  decision_list decisions;
};

/// The predicted step times (and the adapter's decisions) of `steps` steps of `plan` under
/// `script`.
prediction predicted(const runtime::cluster& c, const runtime::profile_table& profile,
                     const runtime::plan& plan, const runtime::link_timeline& script, int steps,
                     follows mode) {
  prediction out;
  if (mode == follows::static_plan) {
    runtime::sim_options so;
    so.steps = steps;
    out.step_s = runtime::simulate(c, profile.model(), profile, plan, script, so).step_times_s;
    return out;
  }
  runtime::adaptive_options ao;
  ao.steps = steps;
  ao.policy = actors::adapter_options{}.policy;
  for (const auto& s :
       runtime::simulate_adaptive(c, profile.model(), profile, plan, script, ao).adaptive) {
    out.step_s.push_back(s.step_s);
    if (s.decision)
      out.decisions.push_back("step " + std::to_string(s.step + 1) + ": " +
                              std::string(runtime::to_string(s.decision->kind)));
  }
  return out;
}

/// Runs `steps` steps of `plan` under `script` and checks each step's virtual time.
/// Under follows::adaptive the runtime's decisions must also be the simulator's, at the
/// same steps, and there must be one other than keep (or the adaptive comparison would be
/// the static one).
void check_under_script(const std::string& name, const runtime::cluster& c,
                        const runtime::plan& plan, const std::string& script_text, int steps,
                        follows mode) {
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(script_text, c, name);
  const auto prediction = predicted(c, profile, plan, script, steps, mode);
  const auto& want = prediction.step_s;
  const auto calm = predicted(c, profile, plan, {}, steps, mode).step_s;
  // The script must matter, or the comparison would prove nothing.
  bool changed = false;
  for (int k = 0; k < steps; ++k)
    changed = changed || std::abs(want[size_t(k)] - calm[size_t(k)]) > 0.1 * calm[size_t(k)];
  BOOST_CHECK_MESSAGE(changed, name << ": the script changes no step by more than 10%");
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::minutes(2), run_mode_of(mode), script);
  for (int k = 0; k < steps; ++k) {
    const auto r = job.step();
    const double measured = r.end_s - r.start_s;
    BOOST_TEST_MESSAGE(name << " step " << k + 1 << ": runtime " << measured * 1e3
                            << " ms, simulator " << want[size_t(k)] * 1e3 << " ms, calm "
                            << calm[size_t(k)] * 1e3 << " ms");
    BOOST_CHECK_MESSAGE(std::abs(measured - want[size_t(k)]) <= 0.02 * want[size_t(k)],
                        name << " step " << k + 1 << ": runtime " << measured << " s, simulator "
                             << want[size_t(k)] << " s");
  }
  if (mode != follows::adaptive)
    return;
  decision_list got;
  for (const auto& d : job.decisions()) {
    BOOST_TEST_MESSAGE(name << ": " << actors::describe(d));
    got.push_back("step " + std::to_string(d.step) + ": " + d.kind);
  }
  BOOST_CHECK_MESSAGE(got == prediction.decisions, name << ": the runtime decided " << got.size()
                                                        << " times, the simulator "
                                                        << prediction.decisions.size() << " times");
  for (size_t k = 0; k < std::min(got.size(), prediction.decisions.size()); ++k)
    BOOST_CHECK_EQUAL(got[k], prediction.decisions[k]);
  BOOST_CHECK_MESSAGE(std::any_of(got.begin(), got.end(),
                                  [](const std::string& d) { return d.find(": keep") == d.npos; }),
                      name << ": the adapter changed nothing");
}

runtime::plan one_pipeline() {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan a;
  a.micro_batches = 6;
  a.schedule = runtime::schedule_kind::one_f_one_b;
  // cloud A100 pair -> cloud T4 -> edge Jetson: one WAN hop.
  a.stages = {stage({0, 1}, {1, 1}, 0, 2), stage({2}, {2}, 2, 3), stage({4}, {2}, 3, 4)};
  p.pipelines = {a};
  return p;
}

// The WAN drops 10x for two steps then recovers; the edge device slows 3x; the last steps
// see +-20% noise on every transfer of the edge node.
const char* mixed_script = R"([[change]]
step = 2
between = ["cloud", "edge"]
bandwidth_scale = 0.1
[[change]]
step = 4
between = ["cloud", "edge"]
bandwidth_scale = 10
[[device]]
step = 4
device = "e0/0"
slowdown = 3
[[change]]
step = 6
of = "e0"
latency_scale = 5
jitter = 0.2
seed = 3
)";

} // namespace

BOOST_AUTO_TEST_SUITE(injected_virtual_time)

BOOST_AUTO_TEST_CASE(runtime_follows_the_simulator_under_a_script) {
  for (const auto mode : {follows::static_plan, follows::adaptive}) {
    check_under_script("1 pipeline x 3 stages", test_cluster(), one_pipeline(), mixed_script, 7,
                       mode);
    check_under_script(
        "cee-small hybrid", runtime::load_cluster(deepcee::test::cluster_file("cee-small")),
        runtime::load_plan(deepcee::test::configs_dir() / "plans/cee-small-hybrid.json"),
        R"([[change]]
step = 2
between = ["cloud", "edge"]
bandwidth_scale = 0.1
[[device]]
at = 1.5
device = "cloud0/1"
slowdown = 2
[[node]]
step = 3
node = "edge0"
action = "stop"
[[node]]
at = 6
node = "edge0"
action = "resume"
)",
        4, mode);
  }
}

// Two pipelines that both cross the WAN: the link of pipeline 0's cloud->edge hop drops 10x
// and recovers (drop); pipeline 0's edge device slows 300x (slow: the tiny model's
// compute is short beside the WAN's latency). The adapter moves
// micro-batches (or changes the hop's compression) and restores the plan afterwards, and
// the runtime's steps and decisions are the simulator's.
BOOST_AUTO_TEST_CASE(the_adaptive_runtime_follows_simulate_adaptive) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  check_under_script("drop", deepcee::test::slow_wan_cluster(), plan, R"([[change]]
step = 2
between = ["c0/2", "e0/0"]
bandwidth_scale = 0.1
[[change]]
step = 6
between = ["c0/2", "e0/0"]
bandwidth_scale = 10
)",
                     12, follows::adaptive);
  check_under_script("slow", test_cluster(), plan, R"([[device]]
step = 2
device = "e0/0"
slowdown = 300
[[device]]
step = 6
device = "e0/0"
slowdown = 1
)",
                     12, follows::adaptive);
}

BOOST_AUTO_TEST_CASE(a_killed_node_stops_the_job_with_one_line) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(
      "[[node]]\nstep = 2\nnode = \"e0\"\naction = \"kill\"\n", c, "kill.toml");
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, 3), test_corpus(),
                        std::chrono::seconds(20), {}, script);
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

// `deepcee inject` in one process: the same events sent to the running job's coordinator
// (a script_update) instead of given at its start take effect at their step boundaries, the
// step times follow the simulator under the script as if it had been there from the start,
// each step's result names what took effect at its start, the injector is answered once the
// last event is in force, and an injection that names no device of the cluster is refused
// while the job goes on.
BOOST_AUTO_TEST_CASE(injected_events_take_effect_at_their_step_boundaries) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const int steps = 7;
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto script = runtime::parse_link_timeline(mixed_script, c, "mixed.toml");
  const auto want = predicted(c, profile, plan, script, steps, follows::static_plan).step_s;
  const auto calm = predicted(c, profile, plan, {}, steps, follows::static_plan).step_s;
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::minutes(2), run_mode_of(follows::static_plan));
  caf::scoped_actor injector{f.sys};
  const auto first = job.step();
  BOOST_TEST(first.injected.empty());
  // A device the cluster does not have: refused, and the job goes on.
  injector->send(job.coordinator(),
                 messages::script_update{0, runtime::link_timeline({}, {{0, {}, 99, 2.0, 7}})});
  injector->receive([](int64_t step) { BOOST_ERROR("accepted for step " << step); },
                    [](caf::error& e) {
                      BOOST_TEST_MESSAGE("refused: " << to_string(e));
                      BOOST_TEST((actors::code_of(e) == messages::error_code::bad_input));
                    });
  injector->send(job.coordinator(), messages::script_update{0, runtime::parse_injected_events(
                                                                   mixed_script, c, "mixed.toml")});
  for (int k = 1; k < steps; ++k) {
    const auto r = job.step();
    const bool boundary = r.step == 2 || r.step == 4 || r.step == 6;
    BOOST_TEST(r.injected.size() == (boundary ? 1u : 0u), "step " << r.step);
    for (const auto& u : r.injected) {
      BOOST_TEST(u.step == r.step);
      for (const auto& e : u.script.describe(c))
        BOOST_TEST(e.at_s == r.start_s, "step " << r.step << ": " << e.text);
    }
    const double measured = r.end_s - r.start_s;
    BOOST_TEST_MESSAGE("injected step " << r.step << ": runtime " << measured * 1e3
                                        << " ms, simulator " << want[size_t(k)] * 1e3
                                        << " ms, calm " << calm[size_t(k)] * 1e3 << " ms");
    BOOST_CHECK_MESSAGE(std::abs(measured - want[size_t(k)]) <= 0.02 * want[size_t(k)],
                        "step " << r.step << ": runtime " << measured << " s, simulator "
                                << want[size_t(k)] << " s");
  }
  int64_t answered = 0;
  injector->receive([&](int64_t step) { answered = step; },
                    [](caf::error& e) { BOOST_ERROR("refused: " << to_string(e)); });
  BOOST_TEST(answered == 6); // in force once its last event (step 6) is
}

BOOST_AUTO_TEST_SUITE_END()
