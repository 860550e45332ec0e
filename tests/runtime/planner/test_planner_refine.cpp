// The last improvement's moves (planner_refine.hpp) on the planner's own plans for random
// clusters (cluster_generator.hpp): every move is a valid plan of the same batch and layers on
// the plan's devices or fewer, and none of them beats the plan the planner returns by more than
// 0.1% in the simulator (the improvement spends a bounded budget of simulations, which steps of
// hundredths of a percent can use up; the moves it would miss for want of a kind are worth far
// more).
#include "runtime/io/cluster_generator.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/planner/planner_refine.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>

using namespace deepcee::runtime;

namespace {

constexpr generator_options small_clusters{4, 8};

planner_report plan_for(const generated_cluster& g, const profile_table& profiles) {
  planner_options o;
  o.model_name = g.model;
  o.global_batch = g.batch;
  o.time_limit_s = -1;
  return plan_training(g.c, profiles, o);
}

std::multiset<int> devices_of(const plan& p) {
  std::multiset<int> out;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      out.insert(st.devices.begin(), st.devices.end());
  return out;
}

/// Each pipeline covers every layer once, in order; each stage's samples fill a micro-batch.
void check_valid(const plan& q, const plan& p) {
  BOOST_TEST(q.global_batch() == p.global_batch());
  const std::multiset<int> used = devices_of(q), before = devices_of(p);
  BOOST_TEST(std::includes(before.begin(), before.end(), used.begin(), used.end()));
  for (const auto& pp : q.pipelines) {
    BOOST_TEST(pp.micro_batches >= 1);
    BOOST_TEST(pp.stages.front().first_layer == p.pipelines.front().stages.front().first_layer);
    BOOST_TEST(pp.stages.back().last_layer == p.pipelines.front().stages.back().last_layer);
    for (size_t k = 0; k < pp.stages.size(); ++k) {
      const auto& st = pp.stages[k];
      BOOST_TEST(st.first_layer < st.last_layer);
      if (k > 0)
        BOOST_TEST(st.first_layer == pp.stages[k - 1].last_layer);
      int samples = 0;
      for (int n : st.samples) {
        BOOST_TEST(n >= 0);
        samples += n;
      }
      BOOST_TEST(samples == q.micro_batch_size);
      BOOST_TEST(st.samples.size() == st.devices.size());
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_refine)

BOOST_AUTO_TEST_CASE(every_move_is_a_valid_plan_and_none_beats_the_chosen_one) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const generated_cluster g = generate_cluster(seed, small_clusters);
    profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
    BOOST_TEST_CONTEXT("seed " << seed << ": " << g.summary) {
      const planner_report r = plan_for(g, profiles);
      cost_cache costs(g.c, profiles);
      const std::vector<plan> moves = refine_moves(costs, r.best, {});
      BOOST_TEST(!moves.empty());
      for (const auto& q : moves) {
        check_valid(q, r.best);
        const sim_result s = simulate(g.c, profiles.model(), profiles, q);
        BOOST_TEST((s.out_of_memory || s.samples_per_s <= r.best_sim.samples_per_s * (1 + 1e-3)),
                   "a move simulates at " << s.samples_per_s << ", the chosen plan at "
                                          << r.best_sim.samples_per_s);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
