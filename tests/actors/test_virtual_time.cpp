// Virtual time: the runtime's measured step time equals the simulator's prediction for the
// same plan (within 2%), and link samples reach the adapter.
#include "actor_test_util.hpp"

#include "runtime/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

struct scenario {
  std::string name;
  runtime::plan plan;
};

runtime::plan one_pipeline(runtime::schedule_kind kind) {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan a;
  a.micro_batches = 6;
  a.schedule = kind;
  // cloud A100 pair -> cloud T4 -> edge Jetson: one WAN hop, intra-stage DP first.
  a.stages = {stage({0, 1}, {1, 1}, 0, 2), stage({2}, {2}, 2, 3), stage({4}, {2}, 3, 4)};
  p.pipelines = {a};
  return p;
}

std::vector<scenario> scenarios() {
  std::vector<scenario> out;
  out.push_back({"1 pipeline x 3 stages, 1f1b", one_pipeline(runtime::schedule_kind::one_f_one_b)});
  out.push_back({"1 pipeline x 3 stages, zb-h1", one_pipeline(runtime::schedule_kind::zb_h1)});
  out.push_back({"1 pipeline x 3 stages, greedy", one_pipeline(runtime::schedule_kind::greedy)});
  out.push_back(
      {"2 pipelines (3 + 2 stages), gpipe", two_pipeline_plan(runtime::schedule_kind::gpipe)});
  out.push_back(
      {"2 pipelines (3 + 2 stages), zb-h2", two_pipeline_plan(runtime::schedule_kind::zb_h2)});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(virtual_time)

BOOST_AUTO_TEST_CASE(step_time_matches_simulator) {
  const auto cluster = test_cluster();
  const auto corpus = test_corpus();
  for (const auto& sc : scenarios()) {
    const auto spec = runtime::make_model_spec(sc.plan.model);
    const runtime::profile_table profile(spec);
    constexpr int steps = 3;
    runtime::sim_options so;
    so.steps = steps;
    const auto sim = runtime::simulate(cluster, spec, profile, sc.plan, {}, so);
    system_fixture f;
    actors::local_job job(f.sys, cluster, profile, sc.plan, train_for(sc.plan, steps), corpus);
    for (int k = 0; k < steps; ++k) {
      const auto r = job.step();
      const double measured = r.end_s - r.start_s;
      const double predicted = sim.step_times_s[static_cast<size_t>(k)];
      BOOST_TEST_MESSAGE(sc.name << " step " << k + 1 << ": runtime " << measured * 1e3
                                 << " ms, simulator " << predicted * 1e3 << " ms");
      BOOST_CHECK_MESSAGE(std::abs(measured - predicted) <= 0.02 * predicted,
                          sc.name << " step " << k + 1 << ": runtime " << measured
                                  << " s, simulator " << predicted << " s");
    }
  }
}

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_host) {
  // Two runs of the same job give bit-identical losses and virtual times.
  const auto cluster = test_cluster();
  const auto corpus = test_corpus();
  const auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  std::vector<actors::step_result> first;
  for (int run = 0; run < 2; ++run) {
    system_fixture f;
    actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 4), corpus);
    for (int k = 0; k < 4; ++k) {
      auto r = job.step();
      if (run == 0) {
        first.push_back(r);
        continue;
      }
      BOOST_CHECK_EQUAL(r.loss, first[static_cast<size_t>(k)].loss);
      BOOST_CHECK_EQUAL(r.end_s, first[static_cast<size_t>(k)].end_s);
    }
  }
}

BOOST_AUTO_TEST_CASE(link_samples_reach_the_adapter) {
  const auto cluster = test_cluster();
  const auto plan = one_pipeline(runtime::schedule_kind::one_f_one_b);
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 2), test_corpus());
  job.step();
  job.step();
  // Per step and micro-batch, each boundary carries one activation and one gradient of the
  // whole micro-batch (split into parts between the devices).
  const double per_transfer =
      static_cast<double>(spec.transfer_bytes(2, runtime::compression::none));
  const double expected =
      2 /*steps*/ * 6 /*micro*/ * 2 /*boundaries*/ * 2 /*directions*/ * per_transfer;
  double bytes = 0;
  for (const auto& l : job.links())
    bytes += l.bytes;
  BOOST_CHECK_CLOSE(bytes, expected, 1e-9);
  const auto samples = job.samples();
  BOOST_CHECK(!samples.empty());
  for (const auto& s : samples)
    BOOST_CHECK(s.arrival_s >= s.drained_s && s.drained_s >= s.start_s && s.start_s >= s.send_s);
}

BOOST_AUTO_TEST_CASE(a_failing_stage_fails_the_step_instead_of_hanging) {
  // A plan whose micro-batch count does not fit its corpus context is refused up front;
  // a corpus too short for the context is bad input, not a crash.
  const auto cluster = test_cluster();
  auto plan = one_pipeline(runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  auto train = train_for(plan, 2);
  train.batch += 1;
  BOOST_CHECK_THROW(actors::local_job(f.sys, cluster, profile, plan, train, test_corpus()),
                    std::exception);
}

BOOST_AUTO_TEST_SUITE_END()
