#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace deepcee::runtime;
using namespace deepcee::test;
namespace tt = boost::test_tools;

namespace {

struct fixture {
  cluster c = four_pipes_cluster();
  model_spec model = make_model_spec(adapt_model());
  profile_table profile{model};
  plan p = four_pipes_plan();
  double undisturbed_step_s = simulate(c, model, profile, p).step_time_s;
};

/// Mean samples/s of the steps that start in [from, to) and end by `to`, skipping the
/// first `skip` of them.
double mean_rate(const std::vector<adaptive_step>& steps, double from, double to, int skip = 0) {
  double sum = 0;
  int n = 0, seen = 0;
  for (const auto& s : steps)
    if (s.start_s >= from && s.start_s + s.step_s <= to && seen++ >= skip) {
      sum += s.samples_per_s;
      ++n;
    }
  BOOST_TEST_REQUIRE(n > 0);
  return sum / n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(adaptive_simulation)

// four_pipes_cluster: four two-stage pipelines on four nodes of two Jetson AGX Orins. The
// link inside node n0 drops from 2.5 Gbps to 250 Mbps at 1 s and comes back at 4 s.
BOOST_AUTO_TEST_CASE(drop_then_recovery_meets_the_issue_targets) {
  fixture f;
  const auto timeline = parse_link_timeline(R"([[change]]
at = 1.0
between = ["n0/0", "n0/1"]
bandwidth = "250Mbps"
[[change]]
at = 4.0
between = ["n0/0", "n0/1"]
bandwidth = "2.5Gbps"
)",
                                            f.c, "drop.toml");
  adaptive_options o;
  o.steps = 80;
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, timeline, o);
  BOOST_TEST_REQUIRE(r.adaptive.size() == 80u);
  BOOST_TEST_REQUIRE(r.fixed.size() == 80u);
  int decisions = 0;
  for (const auto& s : r.adaptive) {
    if (s.decision) {
      ++decisions;
      BOOST_TEST_MESSAGE("step " << s.step << " at " << s.start_s << " s: " << s.decision->reason);
      BOOST_TEST(s.decision->next.global_batch() == f.p.global_batch());
    }
  }
  BOOST_TEST(decisions >= 2); // one answers the drop, one the recovery
  // Before the drop both run the starting plan.
  BOOST_TEST(r.adaptive[0].step_s == f.undisturbed_step_s);
  BOOST_TEST(r.fixed[0].step_s == f.undisturbed_step_s);
  // During the drop, from the second step after it: >= 1.5x the static plan.
  const double adaptive_drop = mean_rate(r.adaptive, 1.0, 4.0, 2);
  const double static_drop = mean_rate(r.fixed, 1.0, 4.0);
  BOOST_TEST_MESSAGE("during the drop: adaptive " << adaptive_drop << " samples/s, static "
                                                  << static_drop);
  BOOST_TEST(adaptive_drop >= 1.5 * static_drop);
  // ... and >= 90% of what the planner chooses when told of the drop beforehand.
  cluster disturbed = f.c;
  link_override slow;
  slow.from = {link_endpoint::scope::device, 0};
  slow.to = {link_endpoint::scope::device, 1};
  slow.bandwidth_Bps = 250e6 / 8;
  disturbed.overrides.push_back(slow);
  planner_options po;
  po.global_batch = f.p.global_batch();
  const auto informed = plan_training(disturbed, f.profile, po);
  const double informed_rate = simulate(disturbed, f.model, f.profile, informed.best).samples_per_s;
  BOOST_TEST_MESSAGE("the planner told of the drop: " << informed_rate << " samples/s");
  BOOST_TEST(adaptive_drop >= 0.9 * informed_rate);
  // After recovery (the monitor needs three of pipeline 0's transfers, then one step to
  // apply): within 5% of the undisturbed plan, step by step.
  const double undisturbed = f.p.global_batch() / f.undisturbed_step_s;
  int after = 0;
  for (const auto& s : r.adaptive)
    if (s.start_s >= 4.0 && after++ >= 5)
      BOOST_TEST(s.samples_per_s >= 0.95 * undisturbed);
  BOOST_TEST(after > 10);
}

BOOST_AUTO_TEST_CASE(twenty_percent_noise_makes_no_decision) {
  fixture f;
  adaptive_options o;
  o.steps = 100;
  o.sample_noise = 0.2;
  o.seed = 11;
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, {}, o);
  for (const auto& s : r.adaptive) {
    BOOST_TEST(!s.decision.has_value());
    BOOST_TEST(s.step_s == f.undisturbed_step_s, boost::test_tools::tolerance(1e-9));
  }
}

// +-20% random noise on the bandwidth of every transfer (the script's jitter, drawn per
// transfer) over 200 steps, re-plans allowed. Noise is not drift: no re-plan, and at most one
// rebalance in any 50 consecutive steps.
BOOST_AUTO_TEST_CASE(twenty_percent_jitter_over_200_steps_neither_replans_nor_flaps) {
  fixture f;
  std::string script;
  for (const char* node : {"n0", "n1", "n2", "n3"})
    script += std::string("[[change]]\nat = 0\nof = \"") + node + "\"\njitter = 0.2\nseed = 7\n";
  const auto timeline = parse_link_timeline(script, f.c, "noise.toml");
  adaptive_options o;
  o.steps = 200;
  BOOST_TEST_REQUIRE(o.policy.allow_replan);
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, timeline, o);
  // The jitter must reach the steps, or the test would prove nothing.
  double lo = r.fixed.front().step_s, hi = lo;
  for (const auto& s : r.fixed) {
    lo = std::min(lo, s.step_s);
    hi = std::max(hi, s.step_s);
  }
  BOOST_TEST_MESSAGE("static step times under the jitter: " << lo << " .. " << hi << " s");
  BOOST_TEST(hi > lo * 1.001);
  std::vector<int> rebalances;
  for (const auto& s : r.adaptive)
    if (s.decision) {
      BOOST_TEST_MESSAGE("step " << s.step << ": " << s.decision->reason);
      BOOST_TEST(s.decision->kind != decision_kind::replan);
      if (s.decision->kind == decision_kind::rebalance)
        rebalances.push_back(s.step);
    }
  for (size_t k = 1; k < rebalances.size(); ++k)
    BOOST_TEST(rebalances[k] - rebalances[k - 1] >= 50);
}

// A step event happens when the adapted run starts that step, not where the static plan
// would. The adapter answers the drop of step 10, so its steps then differ from the static
// plan's. Every device then slows 2x at step 30. That gives the same run as time events at
// the adapted step 30's start, and another run than time events at the static step 30's
// start. Up to step 29 the run is the one without the slowdown, step by step; step 30 is not.
BOOST_AUTO_TEST_CASE(step_events_land_at_the_adapted_runs_steps) {
  fixture f;
  const std::string drop =
      "[[change]]\nstep = 10\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"25Mbps\"\n";
  const auto with_slowdown = [&](const std::string& when) {
    std::string text = drop;
    for (const auto& d : f.c.devices)
      text += "[[device]]\n" + when + "\ndevice = \"" + d.name + "\"\nslowdown = 2\n";
    return parse_link_timeline(text, f.c, "steps.toml");
  };
  adaptive_options o;
  o.steps = 34;
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, with_slowdown("step = 30"), o);
  const double adapted = r.adaptive[29].start_s, fixed = r.fixed[29].start_s;
  BOOST_TEST_MESSAGE("step 30 starts at " << adapted << " s adapted, " << fixed << " s static");
  BOOST_TEST_REQUIRE(std::any_of(r.adaptive.begin(), r.adaptive.begin() + 29, [](const auto& s) {
    return s.decision && s.decision->kind != decision_kind::keep;
  }));
  BOOST_TEST_REQUIRE(std::abs(adapted - fixed) > 2 * f.undisturbed_step_s);
  const auto time_of = [](double t) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "at = %.17g", t);
    return std::string(buf);
  };
  const auto same =
      simulate_adaptive(f.c, f.model, f.profile, f.p, with_slowdown(time_of(adapted)), o);
  const auto other =
      simulate_adaptive(f.c, f.model, f.profile, f.p, with_slowdown(time_of(fixed)), o);
  const auto never =
      simulate_adaptive(f.c, f.model, f.profile, f.p, parse_link_timeline(drop, f.c, "d.toml"), o);
  bool differs = false;
  for (size_t k = 0; k < r.adaptive.size(); ++k) {
    BOOST_TEST(r.adaptive[k].step_s == same.adaptive[k].step_s, tt::tolerance(1e-9));
    BOOST_TEST(r.adaptive[k].decision.has_value() == same.adaptive[k].decision.has_value());
    differs = differs || std::abs(r.adaptive[k].step_s - other.adaptive[k].step_s) >
                             0.01 * r.adaptive[k].step_s;
    if (k < 29)
      BOOST_TEST(r.adaptive[k].step_s == never.adaptive[k].step_s, tt::tolerance(1e-9));
  }
  BOOST_TEST(differs);
  BOOST_TEST(r.adaptive[29].step_s > 1.2 * never.adaptive[29].step_s);
}

BOOST_AUTO_TEST_CASE(the_static_run_is_the_simulators) {
  fixture f;
  adaptive_options o;
  o.steps = 3;
  const auto timeline = parse_link_timeline(
      "[[change]]\nat = 0.15\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"250Mbps\"\n", f.c,
      "d.toml");
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, timeline, o);
  sim_options so;
  so.steps = 3;
  const auto s = simulate(f.c, f.model, f.profile, f.p, timeline, so);
  for (size_t k = 0; k < 3; ++k)
    BOOST_TEST(r.fixed[k].step_s == s.step_times_s[k]);
  BOOST_CHECK_THROW(simulate_adaptive(f.c, f.model, f.profile, f.p, timeline, {0}),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(default_job)

// The default job (configs/default.toml): the planner's plan for the small model at batch 32
// on edge-end.toml (two pipelines that cross the sites) under default-script.toml, with
// the policy the running job's adapter uses. The link between the sites falls 10x from
// step 120 to step 240. The adapter re-plans to the edge site alone at the end of step 120.
// Its probes see the link come back, and it restores the starting plan. The run is faster
// than the static plan under the same script.
BOOST_AUTO_TEST_CASE(the_default_script_is_answered_and_then_undone) {
  const cluster c = load_cluster(cluster_file("edge-end"));
  const model_spec model = make_model_spec(*model_preset("small"), "small");
  const profile_table profile{model};
  planner_options po;
  po.model_name = "small";
  po.global_batch = 32;
  const plan p = plan_training(c, profile, po).best;
  const auto script = load_link_timeline(configs_dir() / "default-script.toml", c);
  adaptive_options o;
  o.steps = 300;
  const auto r = simulate_adaptive(c, model, profile, p, script, o);
  std::vector<const adaptive_step*> decided;
  for (const auto& s : r.adaptive)
    if (s.decision && s.decision->kind != decision_kind::keep)
      decided.push_back(&s);
  BOOST_TEST_REQUIRE(decided.size() == 2u);
  BOOST_TEST((decided[0]->decision->kind == decision_kind::replan));
  BOOST_TEST(decided[0]->step == 119); // step 120 (from 1), the first under the drop
  BOOST_TEST(decided[0]->decision->predicted_gain() > 2.0);
  BOOST_TEST((decided[1]->decision->kind == decision_kind::restore));
  BOOST_TEST(decided[1]->step >= 239);
  BOOST_TEST(decided[1]->step <= 242); // the probes see the recovery at once
  const auto mean_of_steps = [](const std::vector<adaptive_step>& steps, int first, int last) {
    double sum = 0;
    for (int k = first; k <= last; ++k)
      sum += steps[static_cast<size_t>(k)].samples_per_s;
    return sum / (last - first + 1);
  };
  // During the drop, from the step after the move to step 239: at least twice as fast as
  // the static plan; after the restore's move: the undisturbed plan's speed again.
  BOOST_TEST(mean_of_steps(r.adaptive, 121, 238) > 2.0 * mean_of_steps(r.fixed, 121, 238));
  const int back = static_cast<int>(decided[1]->step) + 2;
  BOOST_TEST(mean_of_steps(r.adaptive, back, 299) == mean_of_steps(r.fixed, back, 299),
             tt::tolerance(0.01));
  const auto total = [](const std::vector<adaptive_step>& steps) {
    double t = 0;
    for (const auto& s : steps)
      t += s.step_s;
    return t;
  };
  BOOST_TEST(total(r.fixed) > 1.5 * total(r.adaptive));
}

BOOST_AUTO_TEST_SUITE_END()
