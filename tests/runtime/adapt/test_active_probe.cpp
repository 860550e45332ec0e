// Active probes. A drifted link or device that the plan in force leaves out is probed every
// probe_options::every_steps steps. The probes clear its drift once it recovered, and not
// before. They cost the plan only where they share its paths, and bring the starting plan back.
#include "runtime/adapt/active_probe.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/adapt/step_adapter.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace deepcee::runtime;
using namespace deepcee::test;
namespace tt = boost::test_tools;

namespace {

/// The link inside node n0 (devices 0 and 1) at 250 Mbps from `down` seconds, back at
/// 2.5 Gbps from `up`.
link_timeline drop(const cluster& c, double down, double up) {
  return parse_link_timeline("[[change]]\nat = " + std::to_string(down) +
                                 "\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"250Mbps\"\n"
                                 "[[change]]\nat = " +
                                 std::to_string(up) +
                                 "\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"2.5Gbps\"\n",
                             c, "drop.toml");
}

/// four_pipes_plan with pipeline 0 on device 0 alone: the pair 0-1 carries nothing. With
/// `keep_device_1`, pipeline 1 runs on devices 1 and 3 instead of 2 and 3, so the plan still
/// uses node n0's internal link (for pipeline 1's all-reduce partners, were there any) and
/// its paths include the pair's.
plan left_out(bool keep_device_1 = false) {
  auto p = four_pipes_plan();
  p.pipelines[0].stages = {{{0}, {4}, 0, 8, compression::none}};
  if (keep_device_1)
    p.pipelines[1].stages[0].devices = {1};
  return p;
}

using fixture = four_pipes_job;

/// An adapter that saw step 0 of `f.p` with the pair 0-1 down: the drift has begun.
step_adapter drifted_adapter(const fixture& f, const link_timeline& t) {
  step_adapter a(f.c, f.model, f.profile, f.p);
  for (const auto& o : observed_transfers(f.c, f.model, f.p, t, 0, f.step_s))
    a.observe(o);
  BOOST_TEST_REQUIRE(a.end_step(f.p, {}, f.p).has_value());
  return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(active_probe)

BOOST_AUTO_TEST_CASE(a_drifted_link_left_out_is_probed_every_two_steps) {
  fixture f;
  auto a = drifted_adapter(f, drop(f.c, 0, 100));
  // The plan still measures the pair: no probe.
  BOOST_TEST(a.probes_due(f.p, f.p, f.step_s).empty());
  BOOST_TEST(measured_pairs(f.p).count({0, 1}) == 1u);
  BOOST_TEST(measured_pairs(left_out()).count({0, 1}) == 0u);
  // Left out: a round every second step, both directions, three transfers each.
  const auto out = left_out();
  std::vector<int> rounds;
  for (int k = 1; k <= 6; ++k) {
    const auto round = a.probes_due(out, out, f.step_s);
    if (round.empty())
      continue;
    rounds.push_back(k);
    BOOST_TEST(round.devices.empty());
    BOOST_TEST_REQUIRE(round.links.size() == 2u);
    BOOST_TEST((round.links[0].from == 0 && round.links[0].to == 1));
    BOOST_TEST((round.links[1].from == 1 && round.links[1].to == 0));
    for (const auto& l : round.links) {
      BOOST_TEST(l.transfers == 3);
      // 1% of the step at the estimated 250 Mbps, over 3 transfers on each of 2 links.
      const double want = std::clamp(0.01 * f.step_s * 250e6 / 8 / 6, 1024.0, 256.0 * 1024);
      BOOST_TEST(l.bytes == std::floor(want));
    }
  }
  BOOST_TEST(rounds == (std::vector<int>{2, 4, 6}));
}

BOOST_AUTO_TEST_CASE(probes_clear_the_drift_once_the_link_recovered_and_not_before) {
  fixture f;
  const auto out = left_out();
  const double out_step = simulate(f.c, f.model, f.profile, out).step_time_s;
  const double up = 10.5 * out_step;
  const auto t = drop(f.c, 0, up);
  auto a = drifted_adapter(f, t);
  int restored_at = -1;
  for (int k = 1; k < 30 && restored_at < 0; ++k) {
    const double at = k * out_step;
    // The left-out plan runs step k (nothing of it crosses the pair), then its boundary.
    if (auto d = a.end_step(out, {}, out)) {
      BOOST_TEST_MESSAGE("step " << k << ": " << to_string(d->kind) << ": " << d->reason);
      BOOST_TEST(at > up, "a decision while the link is still down, at " << at);
      BOOST_TEST((d->kind == decision_kind::restore));
      BOOST_TEST(same_layout(d->next, f.p));
      restored_at = k;
    }
    if (const auto round = a.probes_due(out, out, out_step); !round.empty()) {
      const auto seen = run_probes(f.c, f.profile, out, t, round, at);
      BOOST_TEST(seen.transfers.size() == 6u);
      for (const auto& o : seen.transfers) {
        const double bw = o.bytes / (o.drained_s - o.start_s);
        BOOST_TEST(bw == (at < up ? 250e6 : 2.5e9) / 8, tt::tolerance(1e-9));
      }
      a.observe_probes(seen);
      BOOST_TEST(a.monitor().affected_devices().empty() == (at >= up));
    }
  }
  // The link came back during step 10; the first round after it is at most 2 steps later,
  // and the policy answers at the next step's end.
  BOOST_TEST(restored_at > 10);
  BOOST_TEST(restored_at <= 13);
}

BOOST_AUTO_TEST_CASE(a_probe_holds_the_boundary_only_where_it_shares_a_path_with_the_plan) {
  fixture f;
  const auto t = drop(f.c, 0, 100);
  const probe_round round{{{0, 1, 8192, 3}}, {}};
  // Device 1 is not in the plan: node n0's internal link carries nothing of it.
  const auto apart = run_probes(f.c, f.profile, left_out(), t, round, 1.0);
  BOOST_TEST_REQUIRE(apart.transfers.size() == 3u);
  BOOST_TEST(apart.hold_s == 0);
  // Back to back: each starts when the one before has drained.
  BOOST_TEST(apart.transfers[0].start_s == 1.0);
  BOOST_TEST(apart.transfers[1].start_s == apart.transfers[0].drained_s);
  BOOST_TEST(apart.transfers[2].start_s == apart.transfers[1].drained_s);
  BOOST_TEST(apart.transfers[0].arrival_s - apart.transfers[0].drained_s ==
                 f.c.link_between(0, 1).latency_s,
             tt::tolerance(1e-12));
  // Device 1 in the plan: the pair's path is the plan's too, and the step waits for the
  // three transfers to drain (3 x 8192 B at 250 Mbps).
  const auto shared = run_probes(f.c, f.profile, left_out(true), t, round, 1.0);
  BOOST_TEST(shared.hold_s == 3 * 8192 / (250e6 / 8), tt::tolerance(1e-9));
  BOOST_TEST(shared.hold_s == shared.transfers.back().drained_s - 1.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_slow_device_left_out_is_re_timed_until_it_recovers) {
  fixture f;
  const auto t = parse_link_timeline("[[device]]\nat = 0\ndevice = \"n0/1\"\nslowdown = 3\n"
                                     "[[device]]\nat = 5\ndevice = \"n0/1\"\nslowdown = 1\n",
                                     f.c, "slow.toml");
  step_adapter a(f.c, f.model, f.profile, f.p);
  const double expected = simulate(f.c, f.model, f.profile, f.p).stages[0][1].compute_s;
  for (int k = 0; k < 3; ++k) // its stage computes 3x longer for three steps
    a.end_step(f.p, {{0, 3 * expected}}, f.p, false);
  BOOST_TEST_REQUIRE(a.monitor().affected_devices() == (std::vector<int>{1}));
  const auto out = left_out();
  BOOST_TEST(a.probes_due(out, out, f.step_s).empty());
  const auto round = a.probes_due(out, out, f.step_s);
  BOOST_TEST_REQUIRE(round.devices.size() == 1u);
  BOOST_TEST(round.devices[0].device == 1);
  BOOST_TEST(round.devices[0].ops == 3);
  BOOST_TEST(round.links.empty());
  const auto slow = run_probes(f.c, f.profile, out, t, round, 1.0);
  BOOST_TEST_REQUIRE(slow.slowdowns.size() == 3u);
  for (const auto& [device, x] : slow.slowdowns)
    BOOST_TEST(x == 3.0, tt::tolerance(1e-9));
  BOOST_TEST(slow.hold_s == 0); // a left-out device delays no stage
  a.observe_probes(slow);
  BOOST_TEST(a.monitor().affected_devices() == (std::vector<int>{1}));
  a.observe_probes(run_probes(f.c, f.profile, out, t, round, 6.0));
  BOOST_TEST(a.monitor().affected_devices().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(active_probe_default_drop)

namespace {

struct default_drop {
  cluster c = load_cluster(cluster_file("edge-end"));
  model_spec model = make_model_spec(*model_preset("small"), "small");
  profile_table profile{model};
  plan p;
  link_timeline script = load_link_timeline(configs_dir() / "experiments/default-drop.toml", c);

  default_drop() {
    planner_options po;
    po.model_name = "small";
    po.global_batch = 32;
    p = plan_training(c, profile, po).best;
  }

  /// The planner's plan for the network while the edge-end WAN is down (10 Mbps), as the
  /// script's `# disturbed:` line gives it, simulated there: the reference.
  double reference() const {
    cluster d = c;
    link_override o;
    o.from = {link_endpoint::scope::region, *c.find_region("edge")};
    o.to = {link_endpoint::scope::region, *c.find_region("end")};
    o.bandwidth_Bps = 10e6 / 8;
    o.latency_s = 10e-3;
    d.overrides.push_back(o);
    planner_options po;
    po.model_name = "small";
    po.global_batch = 32;
    return simulate(d, model, profile, plan_training(d, profile, po).best).samples_per_s;
  }
};

} // namespace

// configs/experiments/default-drop.toml: the edge-end WAN drops 10x at step 10 and recovers
// at step 30 (of the run, whichever it is). Step 10 reveals it; it counts as step 0 of the
// answer. The policy re-plans once at its end onto the plan for the whole WAN down. The move
// is charged to step 11, and step 12 runs at >= 90% of the reference. The plan left the WAN
// out, so probes find it back, and the starting plan returns. With +-20% noise on every
// sample the decisions are the same, with no flapping.
BOOST_AUTO_TEST_CASE(answered_within_two_steps_and_undone_after_recovery) {
  const default_drop f;
  const double reference = f.reference();
  const double undisturbed = simulate(f.c, f.model, f.profile, f.p).samples_per_s;
  for (const double noise : {0.0, 0.2}) {
    adaptive_options o;
    o.steps = 120;
    o.sample_noise = noise;
    o.seed = 5;
    const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, f.script, o);
    // The script's steps count from 1: `step = 10` happens when the adapted run starts its
    // step 9 (from 0), as the static run does.
    const int change = 9, recovered = 29;
    std::vector<const adaptive_step*> decided;
    for (const auto& s : r.adaptive) {
      if (s.decision && s.decision->kind != decision_kind::keep) {
        BOOST_TEST_MESSAGE("noise " << noise << " step " << s.step << ": " << s.decision->reason);
        decided.push_back(&s);
      }
    }
    BOOST_TEST_REQUIRE(decided.size() == 2u, "noise " << noise);
    BOOST_TEST((decided[0]->decision->kind == decision_kind::replan));
    BOOST_TEST(decided[0]->step == change);
    BOOST_TEST(r.adaptive[size_t(change + 2)].samples_per_s >= 0.9 * reference);
    // While the WAN is down, probes (and nothing else) cross it: no restore until it is up.
    BOOST_TEST((decided[1]->decision->kind == decision_kind::restore));
    BOOST_TEST(decided[1]->step >= recovered);
    BOOST_TEST(decided[1]->step <= recovered + 3);
    double held = 0;
    for (const auto& s : r.adaptive) {
      held += s.probe_hold_s;
      if (s.step >= recovered + 5)
        BOOST_TEST(s.samples_per_s >= 0.95 * undisturbed, "step " << s.step);
    }
    // The left-out plan runs on devices apart from the WAN's paths: probing held nothing.
    BOOST_TEST(held == 0);
  }
}

// A drop of the whole edge-end WAN seen on the pairs the plan crosses is taken for the WAN's.
// The pairs across it that no transfer measured get the same ratio, so that the first
// decision already knows them slow. One pair of a WAN that drifts while another measured
// pair across it stays calm is that pair's own.
BOOST_AUTO_TEST_CASE(a_wan_drop_is_inferred_for_the_pairs_not_measured) {
  const default_drop f;
  const auto feed = [&f](environment_monitor& m, int from, int to, double bandwidth) {
    const double latency = f.c.link_between(from, to).latency_s;
    for (int k = 0; k < 3; ++k) {
      const double start = 10.0 * k, drained = start + 1e5 / bandwidth;
      m.observe({from, to, 1e5, start, drained, drained + latency});
    }
  };
  const double wan = f.c.link_between(0, 2).bandwidth_Bps;
  BOOST_TEST_REQUIRE(f.c.devices[0].region != f.c.devices[2].region);
  environment_monitor m(f.c, f.profile, f.p);
  feed(m, 0, 2, wan / 10);
  feed(m, 1, 3, wan / 10);
  const auto est = m.estimated_cluster();
  BOOST_TEST(est.link_between(0, 2).bandwidth_Bps == wan / 10, tt::tolerance(1e-9));
  BOOST_TEST(est.link_between(0, 4).bandwidth_Bps == wan / 10, tt::tolerance(1e-9));
  BOOST_TEST(est.link_between(1, 5).bandwidth_Bps == wan / 10, tt::tolerance(1e-9));
  // The other direction and the links inside a region were not seen to drift.
  BOOST_TEST(est.link_between(2, 0).bandwidth_Bps == wan);
  BOOST_TEST(est.link_between(0, 1).bandwidth_Bps == f.c.link_between(0, 1).bandwidth_Bps);
  BOOST_TEST(m.affected_devices() == (std::vector<int>{0, 1, 2, 3}));

  environment_monitor mixed(f.c, f.profile, f.p);
  feed(mixed, 0, 2, wan / 10);
  feed(mixed, 1, 3, wan); // measured across the same WAN, calm
  const auto own = mixed.estimated_cluster();
  BOOST_TEST(own.link_between(0, 2).bandwidth_Bps == wan / 10, tt::tolerance(1e-9));
  BOOST_TEST(own.link_between(0, 4).bandwidth_Bps == wan);
  BOOST_TEST(mixed.inferred_links().empty());
}

// configs/experiments/default-square.toml: the WAN drops 5x for 5 steps of every 10. The
// restore backoff keeps the adapter from paying a re-plan and a restore at every edge. After
// the first flap it waits for a calm longer than the square's. It stays on the plan that
// holds up in both phases until the wave ends (its last edge, up, at step 50). Then the calm
// lasts and it restores the starting plan.
BOOST_AUTO_TEST_CASE(a_square_wave_is_not_followed_edge_by_edge) {
  const default_drop f;
  const auto square = load_link_timeline(configs_dir() / "experiments/default-square.toml", f.c);
  adaptive_options o;
  o.steps = 60;
  const auto r = simulate_adaptive(f.c, f.model, f.profile, f.p, square, o);
  int moves = 0;
  plan current = f.p;
  for (const auto& s : r.adaptive)
    if (s.decision && s.decision->kind != decision_kind::keep) {
      BOOST_TEST_MESSAGE("step " << s.step << ": " << s.decision->reason);
      if (s.step >= 49) // after the wave (step 50 from 1): only the restore
        BOOST_TEST((s.decision->kind == decision_kind::restore));
      else
        moves += !same_layout(current, s.decision->next);
      current = s.decision->next;
    }
  BOOST_TEST(moves >= 2); // it did answer the drop and try the recovery
  BOOST_TEST(moves <= 3);
  double adaptive = 0, fixed = 0;
  for (size_t k = 0; k < r.fixed.size(); ++k) {
    fixed += r.fixed[k].step_s;
    adaptive += r.adaptive[k].step_s;
  }
  // The moves, priced on the links as the wave has them, do not repay within a 5-step
  // phase. The policy's payback horizon assumes a disturbance lasts 20 steps. What the
  // backoff bounds is their cost, a few per cent of the run.
  BOOST_TEST_MESSAGE("adaptive " << adaptive << " s, static " << fixed << " s");
  BOOST_TEST(adaptive < 1.1 * fixed);
}

BOOST_AUTO_TEST_SUITE_END()
