// The actor runtime computes what single-device training computes: same global batch,
// seed and data give the same loss at every step, for every schedule.
#include "tests/actors/actor_test_util.hpp"

#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// The two-pipeline plan, with activation recomputation on every stage when `recompute`.
void check_same_losses(runtime::schedule_kind kind, bool recompute = false) {
  constexpr int steps = 30;
  auto plan = two_pipeline_plan(kind);
  for (auto& pp : plan.pipelines)
    for (auto& st : pp.stages)
      st.recompute = recompute;
  const auto train = train_for(plan, steps);
  const auto corpus = test_corpus();
  const auto cluster = test_cluster();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));

  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);

  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train, corpus);
  double worst = 0;
  for (int k = 1; k <= steps; ++k) {
    const auto want = reference.train_step();
    const auto got = job.step();
    BOOST_REQUIRE_EQUAL(got.step, k);
    const double rel = std::abs(got.loss - want.loss) / std::abs(want.loss);
    worst = std::max(worst, rel);
    BOOST_CHECK_MESSAGE(rel <= 1e-3, runtime::to_string(kind)
                                         << " step " << k << ": actors " << got.loss
                                         << ", single device " << want.loss);
    BOOST_CHECK_CLOSE(got.lr, want.lr, 1e-9);
  }
  BOOST_TEST_MESSAGE(runtime::to_string(kind)
                     << ": worst relative loss difference over " << steps << " steps " << worst);
}

} // namespace

BOOST_AUTO_TEST_SUITE(same_math)

BOOST_AUTO_TEST_CASE(gpipe) {
  check_same_losses(runtime::schedule_kind::gpipe);
}
BOOST_AUTO_TEST_CASE(one_f_one_b) {
  check_same_losses(runtime::schedule_kind::one_f_one_b);
}
BOOST_AUTO_TEST_CASE(zb_h1) {
  check_same_losses(runtime::schedule_kind::zb_h1);
}
BOOST_AUTO_TEST_CASE(zb_h2) {
  check_same_losses(runtime::schedule_kind::zb_h2);
}
BOOST_AUTO_TEST_CASE(greedy) {
  check_same_losses(runtime::schedule_kind::greedy);
}
// Every stage drops its activations after F and runs F again before B (first stage with
// the embedding and intra-stage data parallelism, middle, last with the head).
BOOST_AUTO_TEST_CASE(one_f_one_b_recomputing) {
  check_same_losses(runtime::schedule_kind::one_f_one_b, true);
}
BOOST_AUTO_TEST_CASE(zb_h1_recomputing) {
  check_same_losses(runtime::schedule_kind::zb_h1, true);
}

BOOST_AUTO_TEST_SUITE_END()
