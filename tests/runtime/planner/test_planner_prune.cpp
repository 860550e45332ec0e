// The search's pruning (planner_options::prune) only skips plans that cannot win: on
// clusters of several shapes, recomputation winning or not, the pruned search chooses the
// same plan as the search that prices every plan it enumerates, and prices fewer.
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/planner/planner.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace deepcee::runtime;

namespace {

planner_report plan_with(const cluster& c, const std::string& model, int batch, bool prune,
                         bool recompute = true, int estimate_budget = 0, double time_limit_s = 0) {
  profile_table profiles(make_model_spec(*model_preset(model), model));
  planner_options o;
  o.model_name = model;
  o.global_batch = batch;
  o.prune = prune;
  o.recompute = recompute;
  o.estimate_budget = estimate_budget;
  o.time_limit_s = time_limit_s;
  o.source = "test-cluster";
  return plan_training(c, profiles, o);
}

/// The plan's layout, samples, layers, encodings, recomputation, schedules and micro-batch
/// counts; the reasons given for left-out devices quote the probes' rates, which the pruned
/// search may not have priced, so only which devices are left out is compared.
std::string chosen(const planner_report& r) {
  plan p = r.best;
  std::string left_out;
  for (const auto& e : p.excluded)
    left_out += std::to_string(e.device) + " ";
  p.excluded.clear();
  return plan_to_json(p) + "\nleft out: " + left_out;
}

void check_same_choice(const cluster& c, const std::string& model, int batch,
                       bool recompute = true) {
  const planner_report pruned = plan_with(c, model, batch, true, recompute);
  const planner_report full = plan_with(c, model, batch, false, recompute);
  BOOST_TEST(chosen(pruned) == chosen(full));
  BOOST_TEST(pruned.best_sim.samples_per_s == full.best_sim.samples_per_s);
  BOOST_TEST(pruned.origin == full.origin);
  BOOST_TEST(pruned.plans_estimated < full.plans_estimated);
}

bool any_recomputes(const plan& p) {
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      if (st.recompute)
        return true;
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_prune)

BOOST_AUTO_TEST_CASE(the_testbed_scenarios_choose_the_same_plan) {
  const cluster testbed = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  check_same_choice(testbed, "gpt2-124m", 512);
  check_same_choice(testbed, "gpt2-355m", 512);
  check_same_choice(load_cluster(deepcee::test::cluster_file("deepcee-testbed-500mbps")),
                    "gpt2-124m", 512);
}

BOOST_AUTO_TEST_CASE(mixed_clusters_choose_the_same_plan) {
  check_same_choice(load_cluster(deepcee::test::cluster_file("cee-mixed")), "gpt2-355m", 512);
  check_same_choice(load_cluster(deepcee::test::cluster_file("datacenter-mixed")), "gpt2-355m",
                    512);
  check_same_choice(load_cluster(deepcee::test::cluster_file("edge-end")), "gpt2-124m", 256);
}

BOOST_AUTO_TEST_CASE(where_recomputation_wins_the_same_plan_is_chosen) {
  // 7b on the testbed: 1.04 samples/s with recomputing stages, 0.54 without; the variants'
  // bounds (against the best plan and against their own plan) must not lose the winner.
  const cluster testbed = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  const planner_report pruned = plan_with(testbed, "7b", 0, true);
  BOOST_TEST(any_recomputes(pruned.best));
  check_same_choice(testbed, "7b", 0);
  check_same_choice(testbed, "7b", 0, false);
}

BOOST_AUTO_TEST_CASE(an_estimate_budget_ends_the_search_whatever_the_clock) {
  // The budget, not the time, stops the search: with a quarter of the estimates the whole
  // search prices, the plan and the count are the same under a limit that never binds and
  // under none, and fewer plans are priced than without the budget.
  const cluster c = load_cluster(deepcee::test::cluster_file("cee-mixed"));
  const planner_report all = plan_with(c, "gpt2-355m", 512, true, true, -1, -1);
  const int budget = all.plans_estimated / 4;
  const planner_report unbounded = plan_with(c, "gpt2-355m", 512, true, true, budget, -1);
  const planner_report limited = plan_with(c, "gpt2-355m", 512, true, true, budget, 1000);
  BOOST_TEST(unbounded.plans_estimated < all.plans_estimated);
  BOOST_TEST(unbounded.plans_estimated == limited.plans_estimated);
  BOOST_TEST(chosen(unbounded) == chosen(limited));
  const planner_report ample =
      plan_with(c, "gpt2-355m", 512, true, true, all.plans_estimated + 1, -1);
  BOOST_TEST(chosen(ample) == chosen(all));
}

BOOST_AUTO_TEST_SUITE_END()
