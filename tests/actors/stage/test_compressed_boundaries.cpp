// A plan's send_compression is executed: the tensors between two stages travel in the
// plan's encoding (the planner may choose it on any hop), so training follows the
// uncompressed run closely but not bit for bit, and the virtual step time stays the
// simulator's.
#include "tests/actors/actor_test_util.hpp"

#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// two_pipeline_plan with every hop (inside a region or across) sending `c`.
runtime::plan compressed_plan(runtime::compression c) {
  auto p = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  for (auto& pp : p.pipelines)
    for (size_t s = 0; s + 1 < pp.stages.size(); ++s)
      pp.stages[s].send_compression = c;
  return p;
}

struct run_result {
  std::vector<double> losses;
  std::vector<double> step_s;
};

run_result run(const runtime::plan& plan, int steps) {
  const auto cluster = test_cluster();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, steps), test_corpus());
  run_result out;
  for (int k = 0; k < steps; ++k) {
    const auto r = job.step();
    out.losses.push_back(r.loss);
    out.step_s.push_back(r.end_s - r.start_s);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(compressed_boundaries)

BOOST_AUTO_TEST_CASE(int8_and_bf16_hops_change_the_math_a_little_and_keep_the_simulated_time) {
  constexpr int steps = 4;
  const auto exact = run(compressed_plan(runtime::compression::none), steps);
  for (auto c : {runtime::compression::int8, runtime::compression::bf16}) {
    BOOST_TEST_CONTEXT(runtime::to_string(c)) {
      const auto plan = compressed_plan(c);
      const auto got = run(plan, steps);
      bool differs = false;
      for (int k = 0; k < steps; ++k) {
        const double rel = std::abs(got.losses[size_t(k)] - exact.losses[size_t(k)]) /
                           std::abs(exact.losses[size_t(k)]);
        BOOST_TEST(rel <= 2e-2, "step " << k + 1 << ": " << got.losses[size_t(k)] << " vs "
                                        << exact.losses[size_t(k)]);
        differs = differs || got.losses[size_t(k)] != exact.losses[size_t(k)];
      }
      BOOST_TEST(differs); // the encoding was applied, not only counted
      const auto spec = runtime::make_model_spec(plan.model);
      const runtime::profile_table profile(spec);
      runtime::sim_options so;
      so.steps = steps;
      const auto sim = runtime::simulate(test_cluster(), spec, profile, plan, {}, so);
      for (int k = 0; k < steps; ++k)
        BOOST_TEST(std::abs(got.step_s[size_t(k)] - sim.step_times_s[size_t(k)]) <=
                       0.02 * sim.step_times_s[size_t(k)],
                   "step " << k + 1);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
