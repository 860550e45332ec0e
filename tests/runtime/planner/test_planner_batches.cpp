// Odd and prime global batches: the only micro-batch size that divides a prime batch over
// several pipelines is 1, and the search must still end with a plan that carries the whole
// batch, fits memory and simulates at the rate it reports (search times are printed by
// bench/bench_adversarial --batch, not asserted here).
#include "runtime/io/cluster_generator.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;

namespace {

void check_batch(uint64_t seed, int devices, int batch) {
  const generated_cluster g = generate_cluster(seed, {devices, devices});
  BOOST_TEST_CONTEXT("seed " << seed << " batch " << batch << ": " << g.summary) {
    BOOST_REQUIRE(g.c.devices.size() == size_t(devices));
    profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
    planner_options o;
    o.model_name = g.model;
    o.global_batch = batch;
    o.source = "generated";
    const planner_report r = plan_training(g.c, profiles, o);
    validate_plan(r.best, devices, "generated");
    BOOST_TEST(r.best.global_batch() == batch);
    BOOST_TEST(!r.best_sim.out_of_memory);
    const sim_result again = simulate(g.c, profiles.model(), profiles, r.best);
    BOOST_TEST(again.samples_per_s == r.best_sim.samples_per_s);
    BOOST_TEST(r.best_sim.samples_per_s > 0);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_batches)

BOOST_AUTO_TEST_CASE(prime_batch_on_twenty_devices) {
  check_batch(12, 20, 1009);
}

BOOST_AUTO_TEST_CASE(odd_batch_on_twenty_devices) {
  check_batch(4, 20, 3 * 5 * 7);
}

BOOST_AUTO_TEST_SUITE_END()
