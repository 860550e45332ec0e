#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/base/splitmix.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace deepcee::runtime;
using namespace deepcee::test;
namespace tt = boost::test_tools;

namespace {

/// The link inside node n0 drops 10x (2.5 Gbps to 250 Mbps) at `at` seconds.
link_timeline drop_at(const cluster& c, double at) {
  return parse_link_timeline("[[change]]\nat = " + std::to_string(at) +
                                 "\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"250Mbps\"\n",
                             c, "drop.toml");
}

/// Uniform in [1 - 0.2, 1 + 0.2], seeded.
double noise(uint64_t i) {
  const double u = static_cast<double>(splitmix64(splitmix64(42) ^ i) >> 11) * 0x1.0p-53;
  return 1 + 0.2 * (2 * u - 1);
}

struct fixture : four_pipes_job {

  /// Feeds step k's transfers (and nothing else) under `timeline`.
  void feed_step(environment_monitor& m, int k, const link_timeline& timeline = {}) const {
    for (const auto& o : observed_transfers(c, model, p, timeline, k * step_s, step_s))
      m.observe(o);
  }
};

const link_estimate& find_link(const std::vector<link_estimate>& links, int from, int to) {
  for (const auto& l : links)
    if (l.from == from && l.to == to)
      return l;
  throw std::logic_error("no such link");
}

} // namespace

BOOST_AUTO_TEST_SUITE(environment_monitor_tests)

BOOST_AUTO_TEST_CASE(ten_times_drop_is_detected_within_the_first_step_that_crosses_it) {
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  for (int k = 0; k < 5; ++k)
    f.feed_step(m, k);
  BOOST_TEST(!m.changed());
  BOOST_TEST(m.affected_devices().empty());
  // The drop comes at the start of step 5: that step's transfers alone reveal it.
  const auto timeline = drop_at(f.c, 5 * f.step_s);
  f.feed_step(m, 5, timeline);
  BOOST_TEST(m.changed());
  const auto links = m.links();
  const auto& l = find_link(links, 0, 1);
  BOOST_TEST(l.drifted);
  BOOST_TEST(l.estimated.bandwidth_Bps == 250e6 / 8, tt::tolerance(1e-9));
  BOOST_TEST(find_link(links, 1, 0).drifted); // the gradients' direction too
  BOOST_TEST(!find_link(links, 2, 3).drifted);
  BOOST_TEST(m.affected_devices() == (std::vector<int>{0, 1}));
  // The estimated cluster carries the drop on that pair only.
  const auto est = m.estimated_cluster();
  BOOST_TEST(est.link_between(0, 1).bandwidth_Bps == 250e6 / 8, tt::tolerance(1e-9));
  BOOST_TEST((est.link_between(2, 3) == f.c.link_between(2, 3)));
  BOOST_TEST(est.link_between(0, 1).latency_s == f.c.link_between(0, 1).latency_s);
}

BOOST_AUTO_TEST_CASE(twenty_percent_noise_on_every_sample_never_triggers) {
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  const auto r = simulate(f.c, f.model, f.profile, f.p);
  uint64_t i = 0;
  for (int k = 0; k < 500; ++k) {
    for (auto o : observed_transfers(f.c, f.model, f.p, {}, k * f.step_s, f.step_s)) {
      const double drain = (o.drained_s - o.start_s) * noise(i++);
      const double latency = (o.arrival_s - o.drained_s) * noise(i++);
      o.drained_s = o.start_s + drain;
      o.arrival_s = o.drained_s + latency;
      m.observe(o);
    }
    for (const auto& d : r.devices)
      m.observe_step_compute(d.device, d.compute_s * noise(i++));
    BOOST_TEST_REQUIRE(!m.changed());
  }
  BOOST_TEST(m.affected_devices().empty());
  const auto est = m.estimated_cluster();
  BOOST_TEST(est.overrides.size() == f.c.overrides.size());
  for (size_t d = 0; d < est.devices.size(); ++d)
    BOOST_TEST(est.devices[d].fp32_flops == f.c.devices[d].fp32_flops);
}

BOOST_AUTO_TEST_CASE(recovery_is_detected_and_restores_the_assumed_link) {
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  const auto timeline = drop_at(f.c, 0);
  f.feed_step(m, 0, timeline);
  BOOST_TEST(m.changed());
  m.acknowledge();
  f.feed_step(m, 1, timeline);
  BOOST_TEST(!m.changed()); // still drifted: no new event
  f.feed_step(m, 2);        // back to 2.5 Gbps
  BOOST_TEST(m.changed());
  BOOST_TEST(!find_link(m.links(), 0, 1).drifted);
  BOOST_TEST(m.affected_devices().empty());
  BOOST_TEST((m.estimated_cluster().link_between(0, 1) == f.c.link_between(0, 1)));
}

BOOST_AUTO_TEST_CASE(a_slow_device_is_detected_from_its_compute_times) {
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  const auto r = simulate(f.c, f.model, f.profile, f.p);
  for (int k = 0; k < 3; ++k)
    for (const auto& d : r.devices)
      m.observe_step_compute(d.device, d.compute_s * (d.device == 5 ? 3.0 : 1.0));
  BOOST_TEST(m.changed());
  BOOST_TEST(m.affected_devices() == (std::vector<int>{5}));
  const auto est = m.estimated_cluster();
  BOOST_TEST(est.devices[5].slowdown == 3, tt::tolerance(1e-9));
  BOOST_TEST(est.devices[4].slowdown == 1);
  // On the estimated cluster the simulator stretches device 5's ops 3x.
  const auto slow = simulate(est, f.model, f.profile, f.p);
  for (size_t k = 0; k < r.devices.size(); ++k)
    BOOST_TEST(slow.devices[k].compute_s ==
                   r.devices[k].compute_s * (r.devices[k].device == 5 ? 3.0 : 1.0),
               tt::tolerance(1e-9));
  // Op by op, against the profile's forward time of device 5's share.
  environment_monitor ops(f.c, f.profile, f.p);
  const double f5 = r.stages[2][1].f_s;
  for (int k = 0; k < 2; ++k)
    ops.observe_op(5, op_kind::forward, 3 * f5);
  BOOST_TEST(!ops.changed());
  ops.observe_op(5, op_kind::forward, 3 * f5);
  BOOST_TEST(ops.changed());
}

BOOST_AUTO_TEST_CASE(calibrated_devices_drift_from_their_first_steps_not_the_profile) {
  // A host 4x slower than the profile everywhere (a lab): no drift once calibrated. Device
  // 5 then slows 3x more: a drift of 3x, not 12x.
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  m.calibrate_devices({}, 1, 3);
  const auto r = simulate(f.c, f.model, f.profile, f.p);
  const auto feed = [&](double slow5) {
    for (const auto& d : r.devices)
      m.observe_step_compute(d.device, 4 * d.compute_s * (d.device == 5 ? slow5 : 1.0));
  };
  feed(9.0); // the warm-up step: left out of the reference
  for (int k = 0; k < 6; ++k)
    feed(1.0);
  BOOST_TEST(!m.changed());
  BOOST_TEST(m.affected_devices().empty());
  for (const auto& d : m.devices())
    BOOST_TEST(d.slowdown == 1, tt::tolerance(1e-9));
  for (int k = 0; k < 3; ++k)
    feed(3.0);
  BOOST_TEST(m.changed());
  BOOST_TEST(m.affected_devices() == (std::vector<int>{5}));
  BOOST_TEST(m.estimated_cluster().devices[5].slowdown == 3, tt::tolerance(1e-9));
  // Uncalibrated, the same host reads as every device 4x slow.
  environment_monitor plain(f.c, f.profile, f.p);
  for (int k = 0; k < 3; ++k)
    for (const auto& d : r.devices)
      plain.observe_step_compute(d.device, 4 * d.compute_s);
  BOOST_TEST(plain.affected_devices().size() == r.devices.size());
}

/// What device `device` computes in one step of `p`, as the simulator times it.
double compute_s(const fixture& f, const plan& p, int device) {
  for (const auto& d : simulate(f.c, f.model, f.profile, p).devices)
    if (d.device == device)
      return d.compute_s;
  return 0;
}

BOOST_AUTO_TEST_CASE(a_calibrated_device_keeps_its_level_across_a_replan) {
  // On a real host a device's ops do not scale with its share as the profile's do: after a
  // re-plan that doubles device 0's layers its ratio falls to 0.4 (fixed costs). That is no
  // drift. A 3x slowdown after it is.
  fixture f;
  environment_monitor m(f.c, f.profile, f.p);
  m.calibrate_devices(
      {.enter_low = 0.5, .enter_high = 2, .clear_low = 0.67, .clear_high = 1.5, .min_samples = 4},
      1, 3);
  for (int k = 0; k < 6; ++k)
    m.observe_step_compute(0, compute_s(f, f.p, 0));
  BOOST_REQUIRE(!m.changed());
  auto more = f.p; // device 0's stage takes the next stage's layers too
  auto& stages = more.pipelines[0].stages;
  stages[0].last_layer = stages[1].last_layer;
  stages.erase(stages.begin() + 1);
  m.rebase(more);
  const double level = 0.4 * compute_s(f, more, 0);
  for (int k = 0; k < 10; ++k)
    m.observe_step_compute(0, level);
  BOOST_TEST(!m.changed());
  BOOST_TEST(m.affected_devices().empty());
  for (int k = 0; k < 4; ++k)
    m.observe_step_compute(0, 3 * level);
  BOOST_TEST(m.changed());
  BOOST_TEST(m.affected_devices() == (std::vector<int>{0}));
}

BOOST_AUTO_TEST_CASE(a_stage_time_is_its_slowest_share) {
  fixture f;
  // Pipeline 0 as one stage of devices 0 and 1, splitting each micro-batch 3:1: the share
  // that takes longer sets the stage's op times.
  auto p = f.p;
  p.pipelines[0].stages = {{{0, 1}, {3, 1}, 0, 8, compression::none}};
  const auto r = simulate(f.c, f.model, f.profile, p);
  double stage_s = 0, other_s = 0;
  int critical = -1;
  for (const auto& d : r.devices)
    if ((d.device == 0 || d.device == 1) && d.compute_s > stage_s) {
      other_s = stage_s;
      stage_s = d.compute_s;
      critical = d.device;
    } else if (d.device == 0 || d.device == 1) {
      other_s = d.compute_s;
    }
  BOOST_TEST_REQUIRE(stage_s > 1.5 * other_s); // else the choice would not show
  environment_monitor same(f.c, f.profile, p);
  for (int k = 0; k < 5; ++k)
    same.observe_stage_compute({0, 1}, stage_s);
  BOOST_TEST(!same.changed());
  environment_monitor slow(f.c, f.profile, p);
  for (int k = 0; k < 3; ++k)
    slow.observe_stage_compute({0, 1}, 2 * stage_s);
  BOOST_TEST(slow.changed());
  BOOST_TEST(slow.affected_devices() == (std::vector<int>{critical}));
}

BOOST_AUTO_TEST_CASE(hysteresis_between_the_bands) {
  drift_tracker t(100.0);
  // A lone outlier, and values that alternate around the outer band, declare nothing.
  for (double v : {10.0, 100.0, 145.0, 155.0, 145.0, 155.0, 100.0, 30.0, 30.0, 100.0})
    BOOST_TEST(!t.add(v));
  BOOST_TEST(!t.drifted());
  BOOST_TEST(!t.add(10.0));
  BOOST_TEST(!t.add(10.0));
  BOOST_TEST(t.add(10.0));
  BOOST_TEST(t.drifted());
  BOOST_TEST(t.estimate() == 10.0); // the window restarts at the new level
  // Back to 0.7x: outside the drift band no more, but not inside the clearing band. Still
  // drifted; once the median has moved there (4 of 7 samples) one event says the level
  // changed.
  for (int k = 0; k < 20; ++k)
    BOOST_TEST(t.add(70.0) == (k == 3));
  BOOST_TEST(t.drifted());
  BOOST_TEST(t.estimate() == 70.0);
  BOOST_TEST(!t.add(95.0));
  BOOST_TEST(!t.add(105.0));
  BOOST_TEST(t.add(99.0));
  BOOST_TEST(!t.drifted());
  BOOST_TEST(t.estimate() == 99.0);
  BOOST_CHECK_THROW(drift_tracker(0.0), std::invalid_argument);
  BOOST_CHECK_THROW(drift_tracker(1.0, drift_band{0.9, 1.5, 0.8, 1.25, 3}), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
