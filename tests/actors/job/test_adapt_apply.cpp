// The running job follows the adapter's allocation from a given step on (rebalance of
// micro-batches between pipelines, a new split of a stage's samples among its devices, a
// new send compression), with the math unchanged: every step's loss stays that of
// single-device training, and each step's virtual time is the simulator's for the plan in
// force. And the policy itself answers a 10x drop of a link the plan uses, in the first
// step whose transfers cross it.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/job_wiring.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

constexpr int all_steps = 30;

/// Runs `plan` with `next` ordered from step `at`; checks every loss against single-device
/// training (relative `tolerance`; dry time computes none) and, where time is emulated
/// (virtual, dry), every step's time against the simulator's for the plan in force (2%,
/// as the compressed boundaries' test does).
void check_adapted(const runtime::plan& plan, const runtime::plan& next, int at,
                   double tolerance = 1e-3, runtime::cluster cluster = test_cluster(),
                   actors::run_mode mode = {}, int steps = all_steps) {
  const bool dry = mode.time == runtime::time_mode::dry;
  const bool wall = mode.time == runtime::time_mode::wall;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  runtime::sim_options so;
  so.steps = 1;
  const double before = runtime::simulate(cluster, spec, profile, plan, {}, so).step_times_s[0];
  const double after = runtime::simulate(cluster, spec, profile, next, {}, so).step_times_s[0];

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train, corpus, std::chrono::minutes(2),
                        mode);
  BOOST_REQUIRE_EQUAL(job.adapt_to(next, at), at);
  double worst = 0;
  for (int k = 1; k <= steps; ++k) {
    const auto got = job.step();
    if (!dry) {
      const auto want = reference.train_step();
      const double rel = std::abs(got.loss - want.loss) / std::abs(want.loss);
      worst = std::max(worst, rel);
      BOOST_CHECK_MESSAGE(rel <= tolerance, "step " << k << ": actors " << got.loss
                                                    << ", single device " << want.loss);
    }
    const double sim = k < at ? before : after;
    BOOST_CHECK_MESSAGE(wall || std::abs((got.end_s - got.start_s) - sim) <= 0.02 * sim,
                        "step " << k << " took " << got.end_s - got.start_s
                                << " s, the simulator says " << sim << " s");
    int forwards = 0; // pipeline 0's first stage runs one F per micro-batch
    for (size_t i = 0; i < got.ops.size(); ++i)
      forwards += got.op_stage[i] == 0 && got.ops[i].kind == 0;
    BOOST_CHECK_EQUAL(forwards, (k < at ? plan : next).pipelines[0].micro_batches);
    check_plan_in_force(f.sys, job, k < at ? plan : next, k);
  }
  // The order is the one decision: on the undisturbed cluster the monitor sees no drift,
  // before or after the allocation changes.
  const auto decisions = job.decisions();
  BOOST_REQUIRE_EQUAL(decisions.size(), 1u);
  BOOST_CHECK_EQUAL(decisions[0].kind, "ordered");
  BOOST_CHECK_EQUAL(decisions[0].effective_step, at);
  BOOST_TEST_MESSAGE("worst relative loss difference over " << steps << " steps " << worst);
}

} // namespace

BOOST_AUTO_TEST_SUITE(adapt_apply)

BOOST_AUTO_TEST_CASE(rebalance_moves_micro_batches_between_pipelines) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto next = plan;
  next.pipelines[0].micro_batches = 3; // 4 + 2 -> 3 + 3: the global batch stays 12
  next.pipelines[1].micro_batches = 3;
  check_adapted(plan, next, 11);
}

BOOST_AUTO_TEST_CASE(rebalance_with_the_greedy_schedule) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::greedy);
  auto next = plan;
  next.pipelines[0].micro_batches = 5;
  next.pipelines[1].micro_batches = 1;
  check_adapted(plan, next, 7);
}

BOOST_AUTO_TEST_CASE(resplit_moves_samples_between_the_devices_of_a_stage) {
  // two_pipeline_plan with micro-batches of 4 (2 + 1 of them: the global batch stays 12).
  auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  plan.micro_batch_size = 4;
  plan.pipelines[0].micro_batches = 2;
  plan.pipelines[1].micro_batches = 1;
  for (auto& pp : plan.pipelines)
    for (auto& sp : pp.stages)
      for (auto& n : sp.samples)
        n *= 2;
  auto next = plan;
  next.pipelines[0].stages[0].samples = {3, 1}; // the A100 pair
  next.pipelines[1].stages[1].samples = {1, 3}; // the Jetson pair
  check_adapted(plan, next, 9);
}

BOOST_AUTO_TEST_CASE(compression_changes_on_the_wan_hops) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto next = plan;
  next.pipelines[0].stages[1].send_compression = runtime::compression::fp16;
  next.pipelines[1].stages[0].send_compression = runtime::compression::fp16;
  check_adapted(plan, next, 13);
}

BOOST_AUTO_TEST_CASE(rebalance_on_a_shared_wan_pipe) {
  // Three pipelines share each WAN direction: the pipes take the new allocation too.
  const auto plan =
      shared_wan_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::gpipe);
  auto next = plan;
  next.pipelines[0].micro_batches = 2;
  next.pipelines[1].micro_batches = 5;
  check_adapted(plan, next, 5, 1e-3, deepcee::test::slow_wan_cluster());
}

BOOST_AUTO_TEST_CASE(every_kind_at_once_in_dry_time) {
  // Dry time skips the math (no group, no weights): the op lists and the emulated times
  // still follow the allocation.
  auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  auto next = plan;
  next.pipelines[0].micro_batches = 2;
  next.pipelines[1].micro_batches = 4;
  next.pipelines[1].stages[0].send_compression = runtime::compression::bf16;
  check_adapted(plan, next, 4, 1e-3, test_cluster(), {runtime::time_mode::dry}, 8);
}

BOOST_AUTO_TEST_CASE(every_kind_at_once_in_shaped_wall_time) {
  // Wall time: the stages' real clocks, the senders waiting as the links say; the math is
  // the same.
  auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto next = plan;
  next.pipelines[0].micro_batches = 1;
  next.pipelines[1].micro_batches = 5;
  next.pipelines[1].stages[1].send_compression = runtime::compression::fp16;
  check_adapted(plan, next, 3, 1e-3, test_cluster(), {runtime::time_mode::wall, true}, 6);
}

BOOST_AUTO_TEST_CASE(an_allocation_that_changes_the_global_batch_is_refused) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto next = plan;
  next.pipelines[0].micro_batches = 5;
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, test_cluster(), profile, plan, train_for(plan, 2), test_corpus());
  BOOST_CHECK_EXCEPTION(job.adapt_to(next, 2), std::runtime_error, [](const auto& e) {
    return std::string(e.what()).find("global batch") != std::string::npos;
  });
  job.step(); // the job goes on with its plan
  BOOST_CHECK(job.decisions().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(adapt_policy_in_a_job)

// The WAN that both pipelines cross drops 10x at the start of step 6 (virtual time): the
// adapter detects it from step 6's transfers, its policy answers, the answer is in force
// from step 7, and training still matches single-device training.
BOOST_AUTO_TEST_CASE(a_10x_wan_drop_is_answered_in_the_step_that_meets_it) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  const auto cluster = deepcee::test::slow_wan_cluster();
  constexpr int steps = all_steps;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  runtime::sim_options so;
  so.steps = 1;
  const double step_s = runtime::simulate(cluster, spec, profile, plan, {}, so).step_times_s[0];
  const int cloud = 0, edge = 1;
  runtime::link_change drop;
  drop.at_s = 5 * step_s + 1e-9;
  drop.a = {runtime::link_endpoint::scope::region, cloud};
  drop.b = {runtime::link_endpoint::scope::region, edge};
  drop.bandwidth_Bps = cluster.links.cross_region.bandwidth_Bps / 10;
  const runtime::link_timeline timeline({drop});

  system_fixture f;
  auto job = actors::make_job_context(cluster, profile, plan, train, corpus);
  job->cluster = std::make_shared<runtime::virtual_cluster>(cluster, spec, profile, plan, timeline);
  actors::actor_guard guard(f.sys);
  const auto part = actors::spawn_local_part(f.sys, job, 0, guard);
  const auto wired =
      actors::wire_job(f.sys, job, actors::wiring_of(part), std::chrono::minutes(2), guard);

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  for (int k = 1; k <= steps; ++k) {
    const auto want = reference.train_step();
    const auto got = actors::request_step(f.sys, wired.coordinator, k, std::chrono::minutes(4));
    if (!got)
      BOOST_FAIL("step " << k << ": " << f.sys.render(got.error()));
    const double rel = std::abs(got->loss - want.loss) / std::abs(want.loss);
    BOOST_CHECK_MESSAGE(rel <= 1e-3, "step " << k << ": actors " << got->loss << ", single device "
                                             << want.loss);
  }
  const auto decisions = actors::adapter_decisions(f.sys, wired.adapter, std::chrono::minutes(1));
  BOOST_REQUIRE(!decisions.empty());
  for (const auto& d : decisions)
    BOOST_TEST_MESSAGE("step " << d.step << ": " << d.kind << " (" << d.reason << "), gain "
                               << d.predicted_gain << ", from step " << d.effective_step);
  const auto& first = decisions.front();
  BOOST_CHECK_EQUAL(first.step, 6);
  BOOST_CHECK_NE(first.kind, "keep");
  BOOST_CHECK_EQUAL(first.effective_step, 7);
  BOOST_CHECK_GT(first.predicted_gain, 1.05);
}

BOOST_AUTO_TEST_SUITE_END()
