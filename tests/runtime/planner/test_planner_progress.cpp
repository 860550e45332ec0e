// The planner reports its progress through planner_options::progress, and only there: the
// phases in order, counters that add up to the report's, and the same plan without it.
#include "runtime/cluster/profile.hpp"
#include "runtime/planner/planner.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(planner_progress_suite)

BOOST_AUTO_TEST_CASE(reports_baselines_search_and_simulation_in_order) {
  const cluster c = load_cluster(deepcee::test::cluster_file("cee-small"));
  const profile_table profiles(make_model_spec(*model_preset("small"), "small"));
  planner_options o;
  o.model_name = "small";
  o.global_batch = 64;
  o.source = "cee-small";
  const planner_report quiet = plan_training(c, profiles, o);

  std::vector<planner_progress> seen;
  o.progress = [&](const planner_progress& p) { seen.push_back(p); };
  const planner_report r = plan_training(c, profiles, o);
  BOOST_TEST_REQUIRE(!seen.empty());

  // Phases in order: baselines, then search, then simulate; never back.
  const std::vector<std::string> order{"baselines", "search", "simulate"};
  size_t phase = 0;
  for (const auto& p : seen) {
    while (phase < order.size() && order[phase] != p.phase)
      ++phase;
    BOOST_TEST_REQUIRE(phase < order.size(), "phase " << p.phase << " out of order");
  }
  int baselines = 0, searched = 0, simulated = 0;
  const planner_progress* last_search = nullptr;
  for (const auto& p : seen) {
    if (p.phase == "baselines") {
      BOOST_TEST(p.plans_simulated == ++baselines);
    } else if (p.phase == "search") {
      BOOST_TEST(p.done == ++searched);
      BOOST_TEST(p.done <= p.total);
      BOOST_TEST(p.plans_simulated == baselines); // the search simulates nothing
      last_search = &p;
    } else {
      BOOST_TEST(p.done == ++simulated);
      BOOST_TEST(p.done <= p.total);
      BOOST_TEST(p.plans_estimated == r.plans_estimated);
    }
  }
  BOOST_TEST(baselines > 0);
  BOOST_TEST_REQUIRE(last_search != nullptr);
  BOOST_TEST(last_search->done == last_search->total);
  BOOST_TEST(last_search->plans_estimated == r.plans_estimated);
  BOOST_TEST(simulated > 0);
  BOOST_TEST(seen.back().done == seen.back().total);
  // Every simulation but the probes of left-out groups is reported.
  BOOST_TEST(seen.back().plans_simulated <= r.plans_simulated);
  BOOST_TEST(seen.back().plans_simulated >= r.plans_simulated - int(r.groups.network.size()));

  // Watching changes nothing.
  BOOST_TEST(r.best_sim.samples_per_s == quiet.best_sim.samples_per_s);
  BOOST_TEST(r.plans_estimated == quiet.plans_estimated);
  BOOST_TEST(r.plans_simulated == quiet.plans_simulated);
  BOOST_TEST(r.origin == quiet.origin);
}

BOOST_AUTO_TEST_SUITE_END()
