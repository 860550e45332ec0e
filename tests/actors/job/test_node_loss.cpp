// Losing a node while training: the coordinator re-plans onto the survivors, the layers
// come from the surviving pipelines' stages, the step in flight runs again with the same
// samples, and the losses stay single-device training's. Where a layer was held only on
// the lost node, the job stops with one line naming the layers.
#include "tests/actors/actor_test_util.hpp"
#include "tests/support/clusters.hpp"

#include "actors/job/adapter_actor.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// Pipeline 0 on the cloud node c0 (devices 0 and 1), pipeline 1 on the edge node e0
/// (devices 4 and 5): every layer is held on both nodes.
runtime::plan replicated_plan() {
  return tiny_plan({pipeline_of(3, {stage({0}, {2}, 0, 2), stage({1}, {2}, 2, 4)}),
                    pipeline_of(3, {stage({4}, {2}, 0, 2), stage({5}, {2}, 2, 4)})});
}

double one_step_s(const runtime::cluster& c, const runtime::profile_table& profile,
                  const runtime::plan& p) {
  runtime::sim_options so;
  so.steps = 1;
  return runtime::simulate(c, profile.model(), profile, p, {}, so).step_times_s[0];
}

/// Node `node` (index `index`) is killed at step 3's start. Step 3 runs again on the
/// planner's plan for the other node; the job ends all its steps with single-device
/// training's losses. Its virtual time charges the liveness bound and the move, then the
/// new plan's step.
void check_survives_killing(const char* node, int index) {
  const auto c = test_cluster();
  const auto plan = replicated_plan();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  constexpr int steps = 6, at = 3;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto next = runtime::plan_for_survivors(c, profile, plan, {index}, {});
  const auto held = runtime::surviving_holders(c, plan, {index});
  const double move_s = runtime::plan_state_moves(c, profile.model(), held.holders, next).seconds;
  const actors::run_mode mode{};

  // deepcee simulate --adaptive predicts the same run, recovery included.
  const auto predicted = runtime::simulate_adaptive(
      c, profile.model(), profile, plan, kill_at_step(c, at, node), adaptive_as_run(steps, mode));
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train, corpus, std::chrono::minutes(2), mode,
                        kill_at_step(c, at, node));
  double worst = 0;
  for (int k = 1; k <= steps; ++k) {
    const auto got = job.step();
    const auto want = reference.train_step();
    const double rel = std::abs(got.loss - want.loss) / std::abs(want.loss);
    worst = std::max(worst, rel);
    BOOST_CHECK_MESSAGE(rel <= 1e-3,
                        "step " << k << ": actors " << got.loss << ", single device " << want.loss);
    const double sim = k < at    ? one_step_s(c, profile, plan)
                       : k == at ? mode.liveness_s + move_s + one_step_s(c, profile, next)
                                 : one_step_s(c, profile, next);
    BOOST_CHECK_MESSAGE(std::abs((got.end_s - got.start_s) - sim) <= 0.02 * sim,
                        "step " << k << " took " << got.end_s - got.start_s << " s, expected "
                                << sim << " s");
    const double adaptive = predicted.adaptive[size_t(k - 1)].step_s;
    BOOST_CHECK_MESSAGE(std::abs((got.end_s - got.start_s) - adaptive) <= 0.02 * adaptive,
                        "step " << k << " took " << got.end_s - got.start_s
                                << " s, simulate --adaptive says " << adaptive << " s");
    if (k >= at) // the static run recovers alike
      BOOST_CHECK_CLOSE(predicted.fixed[size_t(k - 1)].step_s, sim, 2.0);
    const bool traced = std::any_of(got.finish.begin(), got.finish.end(), [&](const auto& s) {
      return s.name.rfind("recovery: node " + std::string(node) + " lost", 0) == 0;
    });
    BOOST_CHECK_EQUAL(traced, k == at);
    if (k >= at)
      check_plan_in_force(f.sys, job, next, k);
  }
  BOOST_TEST_MESSAGE(node << " killed: worst relative loss difference " << worst << "; move "
                          << move_s << " s");
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_loss)

BOOST_AUTO_TEST_CASE(a_killed_edge_node_leaves_the_job_on_the_cloud) {
  check_survives_killing("e0", 1);
}

BOOST_AUTO_TEST_CASE(a_killed_cloud_node_leaves_the_job_on_the_edge) {
  check_survives_killing("c0", 0);
}

BOOST_AUTO_TEST_CASE(a_layer_held_only_on_the_killed_node_stops_the_job_naming_it) {
  const auto c = test_cluster();
  auto plan = replicated_plan();
  plan.pipelines[1].stages = {stage({2}, {2}, 0, 2), stage({5}, {2}, 2, 4)};
  plan.pipelines[0].stages[1] = stage({6}, {2}, 2, 4); // layers 2-3 only on e0 now
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, 3), test_corpus(),
                        std::chrono::minutes(2), {}, kill_at_step(c, 2, "e0"));
  job.step();
  try {
    job.step();
    BOOST_ERROR("a step ran without the layers of the killed node");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE("failed with: " << what);
    BOOST_TEST(what.find("node e0 lost (killed at") != std::string::npos);
    BOOST_TEST(what.find("no other node held layers 2-3, so the job cannot go on") !=
               std::string::npos);
    BOOST_TEST(what.find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
