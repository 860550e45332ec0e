// A plan the planner returns fits every device's memory; baselines that do not fit are never
// the best; when nothing fits, one input error says how far the closest plan is.
#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/planner/plan_estimate.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace deepcee::runtime;

namespace {

planner_report plan_for(const cluster& c, const std::string& model, int batch = 0,
                        bool recompute = true) {
  profile_table profiles(make_model_spec(*model_preset(model), model));
  planner_options o;
  o.model_name = model;
  o.global_batch = batch;
  o.recompute = recompute;
  o.source = "test-cluster";
  return plan_training(c, profiles, o);
}

/// `count` T4s (16 GB each) in one node.
cluster t4_node(int count) {
  return parse_cluster(R"(
[[region]]
name = "r"
tier = "cloud"
[[node]]
name = "n"
region = "r"
devices = [{ kind = "T4", count = )" +
                           std::to_string(count) + " }]\n",
                       "t4.toml");
}

/// Every device of the plan, simulated afresh, within its usable memory.
void check_fits(const cluster& c, const planner_report& r) {
  BOOST_TEST(!r.best_sim.out_of_memory);
  const model_spec model = make_model_spec(r.best.model, r.best.model_name);
  profile_table profiles(model);
  const sim_result again = simulate(c, model, profiles, r.best);
  BOOST_TEST(!again.out_of_memory);
  BOOST_REQUIRE(!again.devices.empty());
  for (const auto& d : again.devices)
    BOOST_TEST(d.peak_bytes <= c.devices[size_t(d.device)].usable_memory_bytes(),
               c.devices[size_t(d.device)].name << " peaks at " << d.peak_bytes);
  BOOST_TEST(worst_shortfall(c, again).device == -1);
}

/// The best baseline row, when there is one, fits memory; so does the deepcee row.
void check_rows(const planner_report& r) {
  if (r.best_baseline >= 0)
    BOOST_TEST(!r.strategies[size_t(r.best_baseline)].sim.out_of_memory);
  for (const auto& row : r.strategies)
    if (row.strategy == "deepcee")
      BOOST_TEST(!row.sim.out_of_memory);
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_memory)

BOOST_AUTO_TEST_CASE(a_7b_model_on_the_testbed_gets_a_plan_that_fits_every_device) {
  // No fixed schedule of a few deep stages holds a 7B model with 2048-token samples in
  // 24 GB cards: without recomputation the planner must go deeper and keep fewer
  // micro-batches in flight.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report r = plan_for(c, "7b", 0, false);
  for (const auto& pp : r.best.pipelines)
    for (const auto& st : pp.stages)
      BOOST_TEST(!st.recompute);
  check_fits(c, r);
  check_rows(r);
  size_t deepest = 0;
  for (const auto& pp : r.best.pipelines)
    deepest = std::max(deepest, pp.stages.size());
  BOOST_TEST(deepest > 8u); // 112 GB of state alone needs more than 8 of the 24 GB cards
  BOOST_TEST(r.best_sim.samples_per_s > 0);
  // Every baseline of this case runs out of memory, so none is the best baseline.
  for (const auto& row : r.strategies)
    if (row.strategy != "deepcee" && row.chosen && row.sim.out_of_memory)
      BOOST_TEST(worst_shortfall(c, row.sim).device >= 0, row.strategy);
}

BOOST_AUTO_TEST_CASE(recomputation_fits_the_7b_model_in_fewer_stages_and_runs_faster) {
  // Recomputing stages keep one 2048-token input per micro-batch (32 MiB) instead of its
  // activations (GBs per block): the plan fits with more micro-batches in flight.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report without = plan_for(c, "7b", 0, false);
  planner_report with = plan_for(c, "7b", 0, true);
  check_fits(c, with);
  check_rows(with);
  int recomputing = 0;
  for (const auto& pp : with.best.pipelines)
    for (const auto& st : pp.stages)
      recomputing += st.recompute ? 1 : 0;
  BOOST_TEST(recomputing > 0);
  BOOST_TEST(with.best_sim.samples_per_s > without.best_sim.samples_per_s);
  // The planner keeps recomputation only where it pays: the same plan without it on any
  // one of its recomputing stages runs out of memory or simulates no faster.
  const model_spec model = make_model_spec(with.best.model, "7b");
  profile_table profiles(model);
  for (size_t pi = 0; pi < with.best.pipelines.size(); ++pi)
    for (size_t s = 0; s < with.best.pipelines[pi].stages.size(); ++s) {
      if (!with.best.pipelines[pi].stages[s].recompute)
        continue;
      plan less = with.best;
      less.pipelines[pi].stages[s].recompute = false;
      const sim_result r = simulate(c, model, profiles, less);
      BOOST_TEST((r.out_of_memory || r.samples_per_s <= with.best_sim.samples_per_s * 1.0001),
                 "stage " << s << ": " << r.samples_per_s);
    }
}

BOOST_AUTO_TEST_CASE(a_model_that_needs_more_than_eight_stages_gets_them) {
  // Twelve 16 GB cards hold a 7B model only as twelve stages of one card each.
  cluster c = t4_node(12);
  planner_report r = plan_for(c, "7b", 16);
  check_fits(c, r);
  check_rows(r);
}

BOOST_AUTO_TEST_CASE(baselines_that_run_out_of_memory_are_never_the_best) {
  // gpt2-1.5b does not fit one 24 GB card: dp does not fit, some pipelines do.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report r = plan_for(c, "gpt2-1.5b", 64);
  check_fits(c, r);
  check_rows(r);
  bool some_out = false;
  for (const auto& row : r.strategies)
    some_out = some_out || (row.chosen && row.sim.out_of_memory);
  BOOST_TEST(some_out);
  BOOST_REQUIRE(r.best_baseline >= 0);
}

BOOST_AUTO_TEST_CASE(when_no_plan_fits_one_line_names_the_model_the_need_and_the_largest_device) {
  // Eight 16 GB cards have 128 GB between them, more than the 7B model's 112 GB of state,
  // but no split of its layers leaves room for one sample's activations.
  cluster c = t4_node(8);
  try {
    plan_for(c, "7b", 16);
    BOOST_FAIL("expected input_error");
  } catch (const input_error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find('\n') == std::string::npos, what);
    BOOST_TEST(what.find("test-cluster") != std::string::npos, what);
    BOOST_TEST(what.find("model 7b") != std::string::npos, what);
    BOOST_TEST(what.find("smallest per-device need found is ") != std::string::npos, what);
    BOOST_TEST(what.find(format_bytes(c.devices.front().usable_memory_bytes()) + " usable") !=
                   std::string::npos,
               what);
  }
}

BOOST_AUTO_TEST_CASE(the_estimate_counts_the_activations_the_schedule_keeps_at_its_peak) {
  // One stage per card over 12 T4s: 1F1B keeps up to 12 micro-batches on the first stage,
  // which no 16 GB card holds, while greedy keeps within each stage's memory.
  cluster c = t4_node(12);
  planner_report r = plan_for(c, "7b", 16);
  const model_spec model = make_model_spec(r.best.model, "7b");
  profile_table profiles(model);
  cost_cache costs(c, profiles);
  plan greedy = r.best;
  BOOST_TEST(estimate_plan(costs, greedy, link_model::real).fits);
  plan fixed = r.best;
  for (auto& pp : fixed.pipelines)
    pp.schedule = schedule_kind::one_f_one_b;
  const plan_estimate e = estimate_plan(costs, fixed, link_model::real);
  BOOST_TEST(!e.fits);
  BOOST_TEST(e.shortfall.device >= 0);
  BOOST_TEST(e.shortfall.need > e.shortfall.usable);
  // The simulator agrees: that plan runs out of memory.
  BOOST_TEST(simulate(c, model, profiles, fixed).out_of_memory);
}

BOOST_AUTO_TEST_SUITE_END()
