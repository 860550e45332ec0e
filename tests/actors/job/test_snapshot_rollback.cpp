// Peer snapshots: a one-pipeline job holds every layer on one node only, so its stages
// snapshot to each other every K steps. Losing a node rolls the job back to the newest
// complete snapshot and replays the steps since with the same samples: every step's loss,
// replayed ones included, stays single-device training's.
#include "tests/actors/actor_test_util.hpp"
#include "tests/support/clusters.hpp"

#include "actors/device/device_worker.hpp"
#include "actors/job/adapter_actor.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/io/link_timeline_toml.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// Layers 0-1 on the cloud node c0 (device 0), layers 2-3 on the edge node e0 (device 4).
runtime::plan one_pipeline() {
  return tiny_plan({pipeline_of(3, {stage({0}, {2}, 0, 2), stage({4}, {2}, 2, 4)})});
}

void check_loss(double got, double want, const std::string& what) {
  BOOST_CHECK_MESSAGE(std::abs(got - want) <= 1e-3 * std::abs(want),
                      what << ": actors " << got << ", single device " << want);
}

bool traced(const actors::step_result& r, const std::string& prefix) {
  return std::any_of(r.finish.begin(), r.finish.end(),
                     [&](const auto& s) { return s.name.rfind(prefix, 0) == 0; });
}

/// Node `node` is killed at step `at`'s start; snapshots every `every` steps. The job rolls
/// back to the snapshot of step `snapshot`, replays the steps after it, and ends all its
/// steps on the survivors' plan with single-device training's losses. A snapshot's copies
/// reach the keepers during the step after it (each keeper tells the coordinator before it
/// reports that step), so `at` - 1 is never a snapshot's step here: that one's completion
/// would race the kill.
void check_rolls_back(const char* node, int index, int at, int every, int snapshot) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  constexpr int steps = 8;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto next = runtime::plan_for_survivors(c, profile, plan, {index}, {});
  actors::run_mode mode{};
  mode.snapshot_every = every;
  mode.liveness_s = 0.001; // so that the replay shows in the step the kill hit
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  std::vector<double> want;
  for (int k = 1; k <= steps; ++k)
    want.push_back(reference.train_step().loss);
  // deepcee simulate --adaptive predicts the run, rollback and replay included.
  const auto predicted = runtime::simulate_adaptive(
      c, profile.model(), profile, plan, kill_at_step(c, at, node), adaptive_as_run(steps, mode));
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train, corpus, std::chrono::minutes(2), mode,
                        kill_at_step(c, at, node));
  double last_end_s = 0;
  for (int k = 1; k <= steps; ++k) {
    const auto got = job.step();
    BOOST_CHECK_EQUAL(got.step, k);
    // Each step from the previous one's end, the rollback's detection, moves and replay in
    // the step the kill hit.
    const double took = got.end_s - last_end_s, sim = predicted.adaptive[size_t(k - 1)].step_s;
    BOOST_CHECK_MESSAGE(std::abs(took - sim) <= 0.02 * sim,
                        "step " << k << " took " << took << " s, simulate --adaptive says " << sim
                                << " s");
    last_end_s = got.end_s;
    check_loss(got.loss, want[size_t(k - 1)], "step " + std::to_string(k));
    BOOST_CHECK_EQUAL(
        traced(got, "rollback: from the snapshot of step " + std::to_string(snapshot)), k == at);
    if (k != at) {
      BOOST_CHECK(got.replayed.empty());
      continue;
    }
    // Steps snapshot + 1 .. at - 1 ran again before step `at`, with the same samples.
    BOOST_CHECK_EQUAL(got.replayed.size(), size_t(at - 1 - snapshot));
    for (size_t i = 0; i < got.replayed.size(); ++i)
      check_loss(got.replayed[i], want[size_t(snapshot) + i],
                 "replayed step " + std::to_string(snapshot + 1 + int(i)));
    check_plan_in_force(f.sys, job, next, k);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshot_rollback)

BOOST_AUTO_TEST_CASE(a_killed_edge_node_rolls_the_job_back_to_its_snapshot) {
  check_rolls_back("e0", 1, 6, 3, 3);
}

BOOST_AUTO_TEST_CASE(a_killed_cloud_node_rolls_the_job_back_to_its_snapshot) {
  check_rolls_back("c0", 0, 6, 2, 4);
}

BOOST_AUTO_TEST_CASE(a_loss_two_steps_after_a_snapshot_replays_the_step_between) {
  check_rolls_back("e0", 1, 6, 4, 4);
}

BOOST_AUTO_TEST_CASE(a_loss_before_the_first_complete_snapshot_stops_naming_the_checkpoint) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  auto train = train_for(plan, 6);
  train.checkpoint_every = 2;
  actors::run_mode mode{};
  mode.snapshot_every = 4;
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train, test_corpus(), std::chrono::minutes(2),
                        mode, kill_at_step(c, 4, "e0"));
  for (int k = 1; k <= 3; ++k)
    job.step();
  try {
    job.step();
    BOOST_ERROR("a step ran without the layers of the killed node");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE("failed with: " << what);
    BOOST_TEST(what.find("no other node held layers 2-3, so the job cannot go on (no snapshot "
                         "was complete yet); resume it from its newest complete checkpoint, "
                         "step 2's") != std::string::npos);
    BOOST_TEST(what.find('\n') == std::string::npos);
  }
}

/// Layer `layer`'s copy that `keeper` kept after `step`: its parameter count, or -1 when it
/// refuses (it keeps none).
int kept_params(caf::actor_system& sys, const actors::stage_actor& keeper, int layer, int step) {
  caf::scoped_actor self{sys};
  int out = -1;
  self->request(keeper, std::chrono::seconds(10), actors::snapshot_atom_v, int32_t{layer},
                int64_t{step})
      .receive([&](actors::stage_snapshot& s) { out = static_cast<int>(s.params.size()); },
               [](caf::error&) {});
  return out;
}

BOOST_AUTO_TEST_CASE(a_corrupted_snapshot_is_refused_and_the_job_goes_on) {
  const auto c = test_cluster();
  const auto plan = one_pipeline();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const auto train = train_for(plan, 3);
  const auto corpus = test_corpus();
  actors::run_mode mode{};
  mode.snapshot_every = 0; // only the copies this test sends
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train, corpus, std::chrono::minutes(2), mode);
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  check_loss(job.step().loss, reference.train_step().loss, "step 1");
  const auto& stages = job.stages();
  actors::stage_snapshot copy;
  {
    caf::scoped_actor self{f.sys};
    self->request(stages[0], std::chrono::seconds(10), actors::snapshot_atom_v)
        .receive([&](actors::stage_snapshot& s) { copy = std::move(s); },
                 [](caf::error& e) { BOOST_FAIL("no snapshot: " << to_string(e)); });
  }
  BOOST_REQUIRE(!copy.params.empty());
  const auto digest = actors::state_digest(copy.params);
  auto corrupted = copy;
  corrupted.params.front().value.front() += 1.0f; // one weight changed on the way
  caf::anon_send(stages[1], actors::keep_atom_v, corrupted, digest);
  BOOST_CHECK_EQUAL(kept_params(f.sys, stages[1], 0, 1), -1);
  caf::anon_send(stages[1], actors::keep_atom_v, copy, digest);
  BOOST_CHECK_GT(kept_params(f.sys, stages[1], 0, 1), 0);
  // The refused copy harmed nothing: the job goes on with single-device training's losses.
  for (int k = 2; k <= 3; ++k)
    check_loss(job.step().loss, reference.train_step().loss, "step " + std::to_string(k));
}

BOOST_AUTO_TEST_SUITE_END()
