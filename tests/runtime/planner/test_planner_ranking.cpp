// The closed-form ranking against the simulator on random clusters (cluster_generator.hpp):
// its order agrees with the simulator's (Spearman's rank correlation, printed with
// --log_level=message), and pruning never loses the plan the simulator ranks first among
// those the unpruned search shortlists: the pruned shortlist holds one at least as fast.
#include "runtime/io/cluster_generator.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/planner/planner_search.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace deepcee::runtime;

namespace {

/// Candidates shortlisted per search: more than the planner simulates, so the
/// correlation sees plans the ranking puts well below the top too.
constexpr size_t shortlist = 24;

/// Ranks of `v` (1 = smallest), ties sharing their mean rank.
std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && v[order[j]] == v[order[i]])
      ++j;
    for (size_t k = i; k < j; ++k)
      r[order[k]] = (double(i) + double(j - 1)) / 2 + 1;
    i = j;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks_of(a), rb = ranks_of(b);
  const double n = double(a.size());
  const double mean = (n + 1) / 2;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 1.0;
}

struct shortlist_scores {
  std::vector<double> estimated, simulated; ///< samples/s of the plans that fit both ways
  double best_simulated = 0;
};

shortlist_scores score_shortlist(const generated_cluster& g, const profile_table& profiles,
                                 bool prune) {
  cost_cache costs(g.c, profiles);
  planner_options o;
  o.model_name = g.model;
  o.prune = prune;
  const grouping groups = planner_grouping(g.c, profiles.model());
  const search_outcome found = search_candidates(costs, groups, g.batch, o, shortlist);
  shortlist_scores out;
  for (const auto& cand : found.ranked) {
    const sim_result s = simulate(g.c, profiles.model(), profiles, cand.p);
    if (s.out_of_memory || !cand.est.fits)
      continue;
    out.estimated.push_back(cand.est.samples_per_s);
    out.simulated.push_back(s.samples_per_s);
    out.best_simulated = std::max(out.best_simulated, s.samples_per_s);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_ranking)

BOOST_AUTO_TEST_CASE(ranking_agrees_with_the_simulator_and_pruning_keeps_its_best) {
  double sum = 0;
  int clusters = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const generated_cluster g = generate_cluster(seed, {4, 16});
    profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
    BOOST_TEST_CONTEXT("seed " << seed << ": " << g.summary) {
      const shortlist_scores all = score_shortlist(g, profiles, false);
      const shortlist_scores pruned = score_shortlist(g, profiles, true);
      BOOST_TEST(pruned.best_simulated >= all.best_simulated * (1 - 1e-9));
      if (all.estimated.size() < 3)
        continue;
      const double rho = spearman(all.estimated, all.simulated);
      BOOST_TEST_MESSAGE("seed " << seed << " rank correlation " << rho << " over "
                                 << all.estimated.size() << " plans: " << g.summary);
      sum += rho;
      ++clusters;
    }
  }
  BOOST_TEST_MESSAGE("mean rank correlation " << sum / std::max(1, clusters) << " over " << clusters
                                              << " clusters");
  BOOST_TEST(clusters >= 6);
  BOOST_TEST(sum / clusters > 0.5);
}

BOOST_AUTO_TEST_SUITE_END()
