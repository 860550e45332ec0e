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
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors::test;
namespace tt = boost::test_tools;

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

// A step event after a decision that changed the step times: the link of pipeline 0's
// cloud->edge hop drops 10x at step 2 and the adapter re-plans, so the adapted run reaches
// step 6 long before the static plan would; at step 6 every device slows 2x. The event
// happens when the adapted run starts step 6 (the step's result carries it at the start of
// its ops), every op of step 6 takes twice what it took in step 5 while step 5's took what
// step 4's did, and the steps are simulate_adaptive's within 2%.
BOOST_AUTO_TEST_CASE(a_step_event_after_a_decision_lands_at_the_adapted_step) {
  const auto c = deepcee::test::slow_wan_cluster();
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const int steps = 8;
  std::string text =
      "[[change]]\nstep = 2\nbetween = [\"c0/2\", \"e0/0\"]\nbandwidth_scale = 0.1\n";
  for (const auto& d : c.devices)
    text += "[[device]]\nstep = 6\ndevice = \"" + d.name + "\"\nslowdown = 2\n";
  const auto script = runtime::parse_link_timeline(text, c, "drop.toml");
  runtime::adaptive_options ao;
  ao.steps = steps;
  ao.policy = actors::adapter_options{}.policy;
  const auto sim = runtime::simulate_adaptive(c, profile.model(), profile, plan, script, ao);
  BOOST_TEST_MESSAGE("step 6 starts at " << sim.adaptive[5].start_s << " s adapted, "
                                         << sim.fixed[5].start_s << " s static");
  BOOST_TEST_REQUIRE(std::abs(sim.adaptive[5].start_s - sim.fixed[5].start_s) >
                     0.1 * sim.fixed[5].step_s);
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::minutes(2), run_mode_of(follows::adaptive), script);
  // Per step: the mean duration of each (flat stage, op kind).
  std::vector<std::map<std::pair<int, int>, double>> mean_op(steps + 1);
  for (int k = 0; k < steps; ++k) {
    const auto r = job.step();
    const double want = sim.adaptive[size_t(k)].step_s;
    BOOST_CHECK_MESSAGE(std::abs(r.end_s - r.start_s - want) <= 0.02 * want,
                        "step " << r.step << ": runtime " << r.end_s - r.start_s << " s, simulator "
                                << want << " s");
    const bool boundary = r.step == 2 || r.step == 6;
    BOOST_TEST_REQUIRE(r.injected.size() == (boundary ? 1u : 0u), "step " << r.step);
    // Its ops start once a re-plan's moves (if one was put in force here) are done.
    double ops_start = r.start_s;
    for (const auto& span : r.finish)
      if (span.name.starts_with("re-plan"))
        ops_start = span.end_s;
    for (const auto& u : r.injected)
      for (const auto& e : u.script.describe(c))
        BOOST_TEST(e.at_s == ops_start, "step " << r.step << ": " << e.text);
    std::map<std::pair<int, int>, int> count;
    auto& means = mean_op[size_t(r.step)];
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const std::pair<int, int> key{r.op_stage[i], r.ops[i].kind};
      means[key] += r.ops[i].end - r.ops[i].start;
      ++count[key];
    }
    for (auto& [key, sum] : means)
      sum /= count[key];
  }
  BOOST_TEST_REQUIRE(!mean_op[5].empty());
  BOOST_TEST_REQUIRE(mean_op[4].size() == mean_op[5].size());
  BOOST_TEST_REQUIRE(mean_op[6].size() == mean_op[5].size());
  for (const auto& [key, five] : mean_op[5]) {
    BOOST_TEST(mean_op[4].at(key) == five, tt::tolerance(1e-9));
    BOOST_TEST(mean_op[6].at(key) == 2 * five, tt::tolerance(1e-9));
  }
}

// The job's step events at the first step, at a step where an injected event lands too,
// and beyond the run: the first one is in force from step 1's start; at step 3 the script's
// event comes first and the injected one after it, so the injected one wins (as in one
// file); the one of step 50 never happens. The steps are the simulator's under the script
// with the injected event written after the script's.
BOOST_AUTO_TEST_CASE(step_events_at_the_first_step_beside_injected_ones_and_beyond_the_run) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const int steps = 4;
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const std::string own = R"([[device]]
step = 1
device = "e0/0"
slowdown = 300
[[device]]
step = 3
device = "e0/0"
slowdown = 1
[[change]]
step = 50
between = ["cloud", "edge"]
bandwidth_scale = 0.1
)";
  const std::string injected = "[[device]]\nstep = 3\ndevice = \"e0/0\"\nslowdown = 100\n";
  const auto want =
      predicted(c, profile, plan, runtime::parse_link_timeline(own + injected, c, "both.toml"),
                steps, follows::static_plan)
          .step_s;
  const auto calm = predicted(c, profile, plan, {}, steps, follows::static_plan).step_s;
  BOOST_TEST_REQUIRE(want[0] > 1.1 * calm[0]);
  BOOST_TEST_REQUIRE(std::abs(want[2] - want[0]) > 0.05 * want[0]);
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::minutes(2), run_mode_of(follows::static_plan),
                        runtime::parse_link_timeline(own, c, "own.toml"));
  caf::scoped_actor injector{f.sys};
  injector->send(job.coordinator(),
                 messages::script_update{0, runtime::parse_injected_events(injected, c, "i.toml")});
  for (int k = 0; k < steps; ++k) {
    const auto r = job.step();
    const double measured = r.end_s - r.start_s;
    BOOST_CHECK_MESSAGE(std::abs(measured - want[size_t(k)]) <= 0.02 * want[size_t(k)],
                        "step " << r.step << ": runtime " << measured << " s, simulator "
                                << want[size_t(k)] << " s");
    const bool boundary = r.step == 1 || r.step == 3;
    BOOST_TEST_REQUIRE(r.injected.size() == (boundary ? 1u : 0u), "step " << r.step);
    if (!boundary)
      continue;
    const auto& events = r.injected.front().script.device_changes();
    BOOST_TEST_REQUIRE(events.size() == (r.step == 1 ? 1u : 2u));
    for (const auto& e : events)
      BOOST_TEST(e.at_s == r.start_s);
    BOOST_TEST(events.back().slowdown == (r.step == 1 ? 300.0 : 100.0)); // the injected one last
    BOOST_TEST(r.injected.front().script.changes().empty());             // step 50's waits
  }
  int64_t answered = 0;
  injector->receive([&](int64_t step) { answered = step; },
                    [](caf::error& e) { BOOST_ERROR("refused: " << to_string(e)); });
  BOOST_TEST(answered == 3);
}

BOOST_AUTO_TEST_CASE(a_killed_node_with_the_only_copy_of_layers_stops_the_job) {
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
    BOOST_TEST(std::string(e.what()).find("node e0 lost (killed at") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("no other node held layer") != std::string::npos);
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
