// Re-plans while training: at a step boundary the job runs a plan with another layer
// partition (other stages, pipelines, devices left out); the new stages take their layers'
// weights and AdamW moments from the old ones, peer to peer. The math does not change (every
// loss stays single-device training's), each later step's virtual time is the simulator's
// for the new plan, and the move's time is what the policy predicts (state_move_seconds).
#include "tests/actors/actor_test_util.hpp"
#include "tests/support/clusters.hpp"

#include "actors/job/adapter_actor.hpp"
#include "actors/job/job_wiring.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

constexpr int all_steps = 30;

/// One pipeline of two stages, cloud A100 then edge Jetson; 6 micro-batches of 2.
runtime::plan two_stage_plan() {
  return tiny_plan({pipeline_of(6, {stage({0}, {2}, 0, 2), stage({4}, {2}, 2, 4)})});
}

/// The flat stages a step ran: one more than the highest op_stage.
int stages_that_ran(const actors::step_result& r) {
  int most = -1;
  for (auto k : r.op_stage)
    most = std::max(most, static_cast<int>(k));
  return most + 1;
}

int stage_count(const runtime::plan& p) {
  int n = 0;
  for (const auto& pipe : p.pipelines)
    n += static_cast<int>(pipe.stages.size());
  return n;
}

/// Runs `plan` with the re-plan to `next` ordered for step `at`; checks every loss against
/// single-device training, every step's virtual time against the simulator for the plan in
/// force, and the move's time (the clock between steps at - 1 and at) against
/// state_move_seconds.
void check_replanned(const runtime::plan& plan, const runtime::plan& next, int at,
                     actors::run_mode mode = {}, int steps = all_steps,
                     const runtime::cluster& cluster = test_cluster()) {
  const bool dry = mode.time == runtime::time_mode::dry;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  runtime::sim_options so;
  so.steps = 1;
  const double before = runtime::simulate(cluster, spec, profile, plan, {}, so).step_times_s[0];
  const double after = runtime::simulate(cluster, spec, profile, next, {}, so).step_times_s[0];
  const double move_s = runtime::state_move_seconds(cluster, spec, plan, next);
  BOOST_REQUIRE_GT(move_s, 0); // some layer crosses a link

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train, corpus, std::chrono::minutes(2),
                        mode);
  BOOST_REQUIRE_EQUAL(job.adapt_to(next, at), at);
  double worst = 0, last_end = 0;
  for (int k = 1; k <= steps; ++k) {
    const auto got = job.step();
    if (!dry) {
      const auto want = reference.train_step();
      const double rel = std::abs(got.loss - want.loss) / std::abs(want.loss);
      worst = std::max(worst, rel);
      BOOST_CHECK_MESSAGE(rel <= 1e-3, "step " << k << ": actors " << got.loss << ", single device "
                                               << want.loss);
    }
    // The re-plan's step starts at its boundary and holds the move (as simulate_adaptive
    // charges it): the simulator's step of the new plan plus state_move_seconds.
    const double sim = (k < at ? before : after) + (k == at ? move_s : 0.0);
    BOOST_CHECK_MESSAGE(std::abs((got.end_s - got.start_s) - sim) <= 0.02 * sim,
                        "step " << k << " took " << got.end_s - got.start_s
                                << " s, the simulator says " << sim << " s");
    BOOST_CHECK_EQUAL(stages_that_ran(got), stage_count(k < at ? plan : next));
    check_plan_in_force(f.sys, job, k < at ? plan : next, k);
    const double gap = got.start_s - last_end;
    BOOST_CHECK_MESSAGE(std::abs(gap) <= 1e-9,
                        "step " << k << " started " << gap << " s after the previous one ended");
    const bool traced = std::any_of(got.finish.begin(), got.finish.end(),
                                    [](const auto& s) { return s.name.rfind("re-plan", 0) == 0; });
    BOOST_CHECK_EQUAL(traced, k == at);
    last_end = got.end_s;
  }
  const auto decisions = job.decisions();
  BOOST_REQUIRE_EQUAL(decisions.size(), 1u);
  BOOST_CHECK_EQUAL(decisions[0].kind, "ordered");
  BOOST_CHECK_EQUAL(decisions[0].effective_step, at);
  BOOST_TEST_MESSAGE("worst relative loss difference over "
                     << steps << " steps " << worst << "; the move took " << move_s << " s");
}

} // namespace

BOOST_AUTO_TEST_SUITE(replan)

BOOST_AUTO_TEST_CASE(state_moves_name_a_holder_for_every_layer) {
  const auto plan = two_stage_plan();
  auto next = plan;
  next.pipelines[0].stages = {stage({0}, {2}, 0, 1), stage({2}, {2}, 1, 3), stage({4}, {2}, 3, 4)};
  const auto spec = runtime::make_model_spec(plan.model);
  const auto moves = runtime::plan_state_moves(test_cluster(), spec, plan, next);
  // Device 2 (a cloud T4) receives layer 1 from device 0 (same node) and layer 2 from
  // device 4 (across the WAN): the receiver's sum, the only one that receives anything.
  BOOST_REQUIRE_EQUAL(moves.moves.size(), 2u);
  double sum = 0;
  for (const auto& m : moves.moves) {
    BOOST_CHECK_EQUAL(m.to_device, 2);
    BOOST_CHECK_EQUAL(m.from_device, m.layer == 1 ? 0 : 4);
    sum += m.seconds;
  }
  BOOST_CHECK_CLOSE(moves.seconds, sum, 1e-9);
  BOOST_CHECK_EQUAL(runtime::state_move_seconds(test_cluster(), spec, plan, next), moves.seconds);
  const auto sources = runtime::layer_sources(plan, next, moves);
  BOOST_REQUIRE_EQUAL(sources.size(), 3u);
  BOOST_CHECK(sources[0] == std::vector<int>({0}));    // its own device held it
  BOOST_CHECK(sources[1] == std::vector<int>({0, 1})); // layer 1 from stage 0, 2 from stage 1
  BOOST_CHECK(sources[2] == std::vector<int>({1}));
}

BOOST_AUTO_TEST_CASE(two_stages_become_three) {
  const auto plan = two_stage_plan();
  auto next = plan;
  next.pipelines[0].stages = {stage({0}, {2}, 0, 1), stage({2}, {2}, 1, 3), stage({4}, {2}, 3, 4)};
  check_replanned(plan, next, 10);
}

BOOST_AUTO_TEST_CASE(two_pipelines_become_one_and_a_device_is_left_out) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto next = plan;
  next.pipelines.resize(1);
  next.pipelines[0].micro_batches = 6; // 4 + 2: the global batch stays 12
  // Pipeline 0's stages keep their devices; its last stage takes a block from the first's
  // (devices 3, 5 and 6 are left out).
  next.pipelines[0].stages = {stage({0, 1}, {1, 1}, 0, 2), stage({2}, {2}, 2, 3),
                              stage({4}, {2}, 3, 4)};
  check_replanned(plan, next, 10);
}

BOOST_AUTO_TEST_CASE(a_replan_between_plans_that_share_wan_pipes) {
  // Three pipelines share each WAN direction (one pipe actor each); the new plan drops the
  // third and moves the other two's boundaries: its own pipes carry its transfers.
  const auto plan =
      shared_wan_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::gpipe);
  auto next = plan;
  next.pipelines.resize(2);
  next.pipelines[0].micro_batches = 5; // 4 + 3 + 3 -> 5 + 5: the global batch stays 20
  next.pipelines[1].micro_batches = 5;
  next.pipelines[0].stages = {stage({0}, {2}, 0, 1), stage({4}, {2}, 1, 4)};
  next.pipelines[1].stages = {stage({5}, {2}, 0, 3), stage({2}, {2}, 3, 4)};
  check_replanned(plan, next, 6, {}, 15, deepcee::test::slow_wan_cluster());
}

BOOST_AUTO_TEST_CASE(a_replan_in_dry_time_moves_nothing_but_keeps_the_time) {
  const auto plan = two_stage_plan();
  auto next = plan;
  next.pipelines[0].stages = {stage({0}, {2}, 0, 1), stage({2}, {2}, 1, 3), stage({4}, {2}, 3, 4)};
  check_replanned(plan, next, 4, {runtime::time_mode::dry}, 8);
}

BOOST_AUTO_TEST_CASE(a_replan_that_changes_the_global_batch_is_refused) {
  const auto plan = two_stage_plan();
  auto next = plan;
  next.pipelines[0].micro_batches = 5;
  next.pipelines[0].stages = {stage({0}, {2}, 0, 1), stage({2}, {2}, 1, 3), stage({4}, {2}, 3, 4)};
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, test_cluster(), profile, plan, train_for(plan, 2), test_corpus());
  BOOST_CHECK_EXCEPTION(job.adapt_to(next, 2), std::runtime_error, [](const auto& e) {
    return std::string(e.what()).find("global batch") != std::string::npos;
  });
  job.step(); // the job goes on with its plan
  BOOST_CHECK_EQUAL(stages_that_ran(job.step()), 2);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(replan_policy_in_a_job)

// The edge Jetson that runs the second stage slows 10x from step 3 (an [inject] script's
// [[device]] slowdown): the monitor sees it in the stages' compute, the policy's best answer
// is a re-plan without it, and the job runs that plan from the next step on, its losses
// still single-device training's.
BOOST_AUTO_TEST_CASE(a_device_slowed_10x_is_left_out_by_a_replan) {
  const auto plan = two_stage_plan();
  const auto cluster = test_cluster();
  constexpr int steps = 12;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  const auto script = runtime::parse_link_timeline(R"([[device]]
step = 3
device = "e0/0"
slowdown = 10
)",
                                                   cluster, "slow-edge.toml");
  runtime::sim_options so;
  so.steps = steps;
  const auto slowed = runtime::simulate(cluster, spec, profile, plan, script, so).step_times_s;

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train, corpus, std::chrono::minutes(2), {},
                        script);
  std::vector<actors::step_result> got;
  for (int k = 1; k <= steps; ++k) {
    got.push_back(job.step());
    const auto want = reference.train_step();
    const double rel = std::abs(got.back().loss - want.loss) / std::abs(want.loss);
    BOOST_CHECK_MESSAGE(rel <= 1e-3, "step " << k << ": actors " << got.back().loss
                                             << ", single device " << want.loss);
  }
  const auto decisions = job.decisions();
  const auto replan = std::find_if(decisions.begin(), decisions.end(),
                                   [](const auto& d) { return d.kind == "replan"; });
  BOOST_REQUIRE_MESSAGE(replan != decisions.end(), "the policy chose no re-plan");
  BOOST_TEST_MESSAGE(actors::describe(*replan));
  // The monitor's window and hysteresis see the slowdown within three steps of it.
  BOOST_CHECK_GE(replan->effective_step, 4);
  BOOST_CHECK_LE(replan->effective_step, 6);
  const auto now = actors::job_now(f.sys, job.wired(), std::chrono::seconds(10));
  for (const auto& pipe : now.job->plan.pipelines)
    for (const auto& sp : pipe.stages)
      BOOST_CHECK_MESSAGE(std::find(sp.devices.begin(), sp.devices.end(), 4) == sp.devices.end(),
                          "the slowed device 4 still runs a stage");
  // From then on the job runs the new plan: its steps are the prediction's, far shorter
  // than the slowed plan's.
  for (int k = replan->effective_step + 1; k <= steps; ++k) {
    const auto& r = got[size_t(k - 1)];
    const double took = r.end_s - r.start_s;
    BOOST_TEST_MESSAGE("step " << k << ": " << took << " s, the slowed plan "
                               << slowed[size_t(k - 1)] << " s, predicted " << replan->new_step_s
                               << " s");
    BOOST_CHECK_MESSAGE(std::abs(took - replan->new_step_s) <= 0.02 * replan->new_step_s,
                        "step " << k << " took " << took << " s, the policy predicted "
                                << replan->new_step_s << " s");
    BOOST_CHECK_LT(took, 0.5 * slowed[size_t(k - 1)]);
  }
}

// The same Jetson slows 10x at step 3 and recovers at 1.376 s (virtual), a few steps after
// the re-plan has left it out (the re-planned steps take 0.4 ms). Only the adapter's active
// probes (three benchmark ops on the device every two steps) can see it recover: its drift
// ends within three steps of the recovery, and the policy decides again (here it keeps the
// re-plan, still the faster plan; the starting plan's return is in tests/runtime/adapt/
// test_active_probe.cpp and the default drop experiment). Decisions, their steps and every
// step's virtual time (the probes' holds included) are simulate_adaptive's, and every loss
// is single-device training's.
BOOST_AUTO_TEST_CASE(a_device_left_out_is_probed_until_it_recovers) {
  const auto plan = two_stage_plan();
  const auto cluster = test_cluster();
  constexpr int steps = 22;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  const auto script = runtime::parse_link_timeline(R"([[device]]
step = 3
device = "e0/0"
slowdown = 10
[[device]]
at = 1.376
device = "e0/0"
slowdown = 1
)",
                                                   cluster, "slow-then-back.toml");
  runtime::adaptive_options ao;
  ao.steps = steps;
  ao.policy = actors::adapter_options{}.policy;
  const auto sim = runtime::simulate_adaptive(cluster, spec, profile, plan, script, ao);
  std::vector<std::string> predicted;
  for (const auto& s : sim.adaptive)
    if (s.decision)
      predicted.push_back("step " + std::to_string(s.step + 1) + ": " +
                          std::string(runtime::to_string(s.decision->kind)));

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train, corpus, std::chrono::minutes(2), {},
                        script);
  for (int k = 1; k <= steps; ++k) {
    const auto r = job.step();
    const auto want = reference.train_step();
    const double rel = std::abs(r.loss - want.loss) / std::abs(want.loss);
    BOOST_CHECK_MESSAGE(rel <= 1e-3,
                        "step " << k << ": actors " << r.loss << ", single device " << want.loss);
    const double took = r.end_s - r.start_s, simulated = sim.adaptive[size_t(k - 1)].step_s;
    BOOST_TEST_MESSAGE("step " << k << ": " << took << " s, simulate_adaptive " << simulated
                               << " s");
    BOOST_CHECK_MESSAGE(std::abs(took - simulated) <= 0.02 * simulated,
                        "step " << k << " took " << took << " s, simulate_adaptive " << simulated
                                << " s");
  }
  std::vector<std::string> got;
  for (const auto& d : job.decisions()) {
    BOOST_TEST_MESSAGE(actors::describe(d));
    got.push_back("step " + std::to_string(d.step) + ": " + d.kind);
  }
  BOOST_TEST(got == predicted, boost::test_tools::per_element());
  const auto replan = std::find_if(
      got.begin(), got.end(), [](const std::string& d) { return d.find(": replan") != d.npos; });
  BOOST_REQUIRE_MESSAGE(replan != got.end(), "no re-plan answered the slowdown");
  // The step (from 1) during which the device recovered: a probe round comes at most two
  // steps later, and the policy answers at the next step's end.
  int recovered = 0;
  for (const auto& s : sim.adaptive)
    if (recovered == 0 && s.start_s + s.step_s > 1.376)
      recovered = s.step + 1;
  BOOST_TEST_REQUIRE(recovered > 0);
  // The decision after the re-plan: the drift's end, seen by the probes alone.
  BOOST_REQUIRE_MESSAGE(replan + 1 != got.end(), "nothing saw the device recover");
  const int ended_at = std::stoi((replan + 1)->substr(5));
  BOOST_TEST_MESSAGE("recovered during step " << recovered << ", drift ended at step " << ended_at);
  BOOST_TEST(ended_at > recovered);
  BOOST_TEST(ended_at <= recovered + 3);
  BOOST_TEST(job.decisions().back().reason.find("nothing drifted") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
