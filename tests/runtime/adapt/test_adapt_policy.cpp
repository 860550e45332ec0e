#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/base/splitmix.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;
using namespace deepcee::test;
namespace tt = boost::test_tools;

namespace {

struct fixture : four_pipes_job {
  /// The link inside node n0, which pipeline 0 uses, at a tenth of its 2.5 Gbps.
  link_timeline drop = parse_link_timeline(
      "[[change]]\nat = 0\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"250Mbps\"\n", c, "d.toml");

  /// A monitor that watched one step of the plan under `timeline`, with `noise` on every
  /// transfer.
  environment_monitor watched(const link_timeline& timeline, double noise = 0, int steps = 1) {
    environment_monitor m(c, profile, p);
    uint64_t i = 0;
    const auto factor = [&] {
      const double u = static_cast<double>(splitmix64(splitmix64(7) ^ i++) >> 11) * 0x1.0p-53;
      return 1 + noise * (2 * u - 1);
    };
    for (int k = 0; k < steps; ++k)
      for (auto o : observed_transfers(c, model, p, timeline, k * step_s, step_s)) {
        const double drain = (o.drained_s - o.start_s) * factor();
        o.arrival_s = o.start_s + drain + (o.arrival_s - o.drained_s) * factor();
        o.drained_s = o.start_s + drain;
        m.observe(o);
      }
    return m;
  }
};

double throughput(const fixture& f, const plan& p, const link_timeline& timeline) {
  return simulate(f.c, f.model, f.profile, p, timeline).samples_per_s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(adapt_policy)

BOOST_AUTO_TEST_CASE(a_ten_times_drop_moves_micro_batches_to_the_other_pipelines) {
  fixture f;
  auto m = f.watched(f.drop);
  BOOST_TEST_REQUIRE(m.changed());
  policy_options o;
  o.allow_replan = false;
  const auto d = choose_adaptation(m.estimated_cluster(), f.model, f.profile, f.p, f.p,
                                   m.affected_devices(), o);
  BOOST_TEST_MESSAGE("decision: " << d.reason);
  BOOST_TEST(d.kind != decision_kind::keep);
  BOOST_TEST(d.next.global_batch() == f.p.global_batch());
  BOOST_TEST(d.next.micro_batch_size == f.p.micro_batch_size);
  BOOST_TEST(d.next.pipelines[0].micro_batches < f.p.pipelines[0].micro_batches);
  for (size_t k = 1; k < 4; ++k)
    BOOST_TEST(d.next.pipelines[k].micro_batches >= f.p.pipelines[k].micro_batches);
  BOOST_TEST(d.move_s == 0.0);
  BOOST_TEST(d.reason.find("micro-batches [8,8,8,8] -> [") != std::string::npos);
  // The predicted step times are the simulator's on the estimated cluster ...
  const auto est = m.estimated_cluster();
  BOOST_TEST(d.old_step_s == simulate(est, f.model, f.profile, f.p).step_time_s);
  BOOST_TEST(d.new_step_s == simulate(est, f.model, f.profile, d.next).step_time_s);
  BOOST_TEST(d.predicted_gain() >= 1.5);
  // ... and on the disturbed network itself the new plan runs >= 1.5x the static one.
  BOOST_TEST(throughput(f, d.next, f.drop) >= 1.5 * throughput(f, f.p, f.drop));
}

BOOST_AUTO_TEST_CASE(a_replan_competes_and_keeps_the_global_batch) {
  fixture f;
  auto m = f.watched(f.drop);
  const auto d =
      choose_adaptation(m.estimated_cluster(), f.model, f.profile, f.p, f.p, m.affected_devices());
  BOOST_TEST_MESSAGE("decision: " << d.reason);
  BOOST_TEST(d.kind != decision_kind::keep);
  BOOST_TEST(d.next.global_batch() == f.p.global_batch());
  BOOST_TEST(throughput(f, d.next, f.drop) >= 1.5 * throughput(f, f.p, f.drop));
  // With re-planning the choice is at least as fast as without it.
  policy_options no_replan;
  no_replan.allow_replan = false;
  const auto cheap = choose_adaptation(m.estimated_cluster(), f.model, f.profile, f.p, f.p,
                                       m.affected_devices(), no_replan);
  BOOST_TEST(d.new_step_s <= cheap.new_step_s);
}

BOOST_AUTO_TEST_CASE(noise_changes_nothing) {
  fixture f;
  auto m = f.watched({}, 0.2, 200);
  BOOST_TEST(!m.changed());
  const auto d =
      choose_adaptation(m.estimated_cluster(), f.model, f.profile, f.p, f.p, m.affected_devices());
  BOOST_TEST(d.kind == decision_kind::keep);
  BOOST_TEST(d.next.global_batch() == f.p.global_batch());
  BOOST_TEST(d.old_step_s == d.new_step_s);
  BOOST_TEST(!d.reason.empty());
}

BOOST_AUTO_TEST_CASE(after_recovery_the_starting_plan_comes_back) {
  fixture f;
  auto m = f.watched(f.drop);
  policy_options o;
  o.allow_replan = false;
  const auto d = choose_adaptation(m.estimated_cluster(), f.model, f.profile, f.p, f.p,
                                   m.affected_devices(), o);
  // The link is back: on the assumed cluster the rebalanced plan loses to the starting one.
  const auto back = choose_adaptation(f.c, f.model, f.profile, d.next, f.p, {}, o);
  BOOST_TEST(back.kind == decision_kind::restore);
  BOOST_TEST(back.new_step_s == f.step_s);
  BOOST_TEST(back.next.global_batch() == f.p.global_batch());
}

BOOST_AUTO_TEST_CASE(moving_state_is_priced_over_the_links) {
  fixture f;
  BOOST_TEST(state_move_seconds(f.c, f.model, f.p, f.p) == 0.0);
  // Pipeline 0's stages trade devices: device 0 receives layers 4-7, device 1 layers 0-3,
  // each layer from whichever holder has the fastest link to it (another node's 10 Gbps
  // beats the node's own 2.5 Gbps), one layer after another.
  plan q = f.p;
  std::swap(q.pipelines[0].stages[0].devices, q.pipelines[0].stages[1].devices);
  const auto receive = [&](int dev, int first, int last, std::vector<int> holders) {
    double s = 0;
    for (int layer = first; layer < last; ++layer) {
      const auto& l = f.model.layers[static_cast<size_t>(layer)];
      const double bytes = static_cast<double>(l.param_bytes + l.optimizer_bytes);
      double best = 1e300;
      for (int h : holders)
        best = std::min(best, f.c.link_between(h, dev).transfer_time(bytes));
      s += best;
    }
    return s;
  };
  const double to0 = receive(0, 4, 8, {1, 3, 5, 7});
  const double to1 = receive(1, 0, 4, {0, 2, 4, 6});
  BOOST_TEST(to0 < receive(0, 4, 8, {1}));
  BOOST_TEST(state_move_seconds(f.c, f.model, f.p, q) == std::max(to0, to1), tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(moves_must_repay_themselves_within_the_payback_horizon) {
  fixture f;
  // Pipeline 0 cut badly: its first stage holds 7 of the 8 layers. Going back to the
  // starting plan moves layers 4-6 to device 1; a rebalance moves nothing.
  plan skewed = f.p;
  skewed.pipelines[0].stages[0].last_layer = 7;
  skewed.pipelines[0].stages[1].first_layer = 7;
  const double move = state_move_seconds(f.c, f.model, skewed, f.p);
  BOOST_TEST_REQUIRE(move > 0.0);
  policy_options o;
  o.allow_replan = false;
  o.payback_steps = 1000;
  const auto patient = choose_adaptation(f.c, f.model, f.profile, skewed, f.p, {}, o);
  BOOST_TEST_MESSAGE("patient: " << patient.reason);
  BOOST_TEST(patient.kind == decision_kind::restore);
  BOOST_TEST(patient.move_s == move);
  BOOST_TEST(patient.new_step_s == f.step_s);
  o.payback_steps = 0; // nothing that moves state can repay it
  const auto hasty = choose_adaptation(f.c, f.model, f.profile, skewed, f.p, {}, o);
  BOOST_TEST_MESSAGE("hasty: " << hasty.reason);
  BOOST_TEST(hasty.kind != decision_kind::restore);
  BOOST_TEST(hasty.move_s == 0.0);
  BOOST_TEST(hasty.next.global_batch() == f.p.global_batch());
}

BOOST_AUTO_TEST_SUITE_END()
