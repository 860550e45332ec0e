#include "runtime/adapt/wall_transfers.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

constexpr double cost = 0.005; ///< the path's cost per message in these tests

/// Device 0 (node n0) to device 2 (node n1), a pair across nodes, whose messages drain in
/// 10 ms at the cluster's bandwidth.
struct fixture {
  cluster c = deepcee::test::four_pipes_cluster();
  double bandwidth = c.link_between(0, 2).bandwidth_Bps;
  double bytes = 0.01 * bandwidth;
  wall_transfer_options quick{.warm_up = 1, .calibration = 3, .noise_factor = 3};

  /// A message sent at `send` that arrived after the cost and `drain` seconds.
  real_message message(double send, double drain) const {
    return {.from_node = 0,
            .to_node = 1,
            .parts = {{0, 2, bytes}},
            .send_s = send,
            .arrival_s = send + cost + drain};
  }
  /// Calibrates `w` on lone messages at the cluster's bandwidth (a second apart).
  void calibrate(wall_transfers& w) const {
    for (int k = 0; k < quick.warm_up + quick.calibration; ++k)
      BOOST_TEST(w.observe(message(k, k == 0 ? 0.5 : 0.01)).empty());
  }
};

double bandwidth_of(const link_observation& o) {
  return o.bytes / (o.drained_s - o.start_s);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(wall_transfers_tests, fixture)

BOOST_AUTO_TEST_CASE(the_cost_per_message_is_calibrated_after_the_warm_up) {
  wall_transfers w(c, {0, 0}, quick);
  BOOST_TEST(!w.message_cost_s(0, 1));
  calibrate(w); // the warm-up message took 0.5 s: left out
  BOOST_TEST_REQUIRE(w.message_cost_s(0, 1).has_value());
  BOOST_TEST(*w.message_cost_s(0, 1) == cost, tt::tolerance(1e-9));
  BOOST_TEST(!w.message_cost_s(1, 0)); // each direction its own
}

BOOST_AUTO_TEST_CASE(a_lone_message_drains_from_its_send_and_cost_to_its_arrival) {
  wall_transfers w(c, {0, 0}, quick);
  calibrate(w);
  // The link drops 10x: 100 ms instead of 10.
  const auto seen = w.observe(message(10, 0.1));
  BOOST_TEST_REQUIRE(seen.size() == 1u);
  BOOST_TEST(bandwidth_of(seen[0]) == bandwidth / 10, tt::tolerance(1e-6));
  BOOST_TEST(seen[0].arrival_s - seen[0].drained_s == c.link_between(0, 2).latency_s,
             tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(a_message_queued_behind_the_previous_one_starts_when_that_one_arrived) {
  wall_transfers w(c, {0, 0}, quick);
  calibrate(w);
  // Two messages at a tenth of the bandwidth, the second sent 10 ms after the first: it
  // waits 90 ms on the connection. Timed from its send and cost, it would read half.
  const auto first = message(10, 0.1);
  w.observe(first);
  auto second = message(10.01, 0);
  second.arrival_s = first.arrival_s + 0.1;
  const auto seen = w.observe(second);
  BOOST_TEST_REQUIRE(seen.size() == 1u);
  BOOST_TEST(bandwidth_of(seen[0]) == bandwidth / 10, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(queued_messages_do_not_calibrate_the_cost) {
  wall_transfers w(c, {0, 0}, quick);
  w.observe(message(0, 0.01)); // warm-up
  for (int k = 0; k < 3; ++k) {
    auto queued = message(1, 0);
    queued.arrival_s = 2 + k; // sent long before the previous one arrived
    w.observe(queued);
  }
  BOOST_TEST(!w.message_cost_s(0, 1));
}

BOOST_AUTO_TEST_CASE(a_path_faster_than_its_rate_has_a_negative_cost_and_no_drift) {
  // A token bucket passes the first bytes at once: 10 ms of drain arrive in 6.
  wall_transfers w(c, {0, 0}, quick);
  for (int k = 0; k < 4; ++k)
    w.observe({.from_node = 0,
               .to_node = 1,
               .parts = {{0, 2, bytes}},
               .send_s = 1.0 * k,
               .arrival_s = k + 0.006});
  BOOST_TEST_REQUIRE(w.message_cost_s(0, 1).has_value());
  BOOST_TEST(*w.message_cost_s(0, 1) == -0.004, tt::tolerance(1e-9));
  const auto seen = w.observe(
      {.from_node = 0, .to_node = 1, .parts = {{0, 2, bytes}}, .send_s = 10, .arrival_s = 10.006});
  BOOST_TEST_REQUIRE(seen.size() == 1u);
  BOOST_TEST(bandwidth_of(seen[0]) == bandwidth, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(parts_of_one_message_each_see_the_message_bandwidth) {
  wall_transfers w(c, {0, 0}, quick);
  calibrate(w);
  auto m = message(10, 0.1);
  m.parts = {{0, 2, 0.6 * bytes}, {1, 2, 0.4 * bytes}};
  const auto seen = w.observe(m);
  BOOST_TEST_REQUIRE(seen.size() == 2u);
  BOOST_TEST(seen[1].from == 1);
  for (const auto& o : seen)
    BOOST_TEST(bandwidth_of(o) == bandwidth / 10, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(a_message_within_one_node_is_no_link_observation) {
  wall_transfers w(c, {0, 0}, {.warm_up = 0, .calibration = 1, .noise_factor = 3});
  for (int k = 0; k < 3; ++k)
    BOOST_TEST(w.observe({.from_node = 0,
                          .to_node = 0,
                          .parts = {{0, 1, bytes}},
                          .send_s = 1.0 * k,
                          .arrival_s = k + 0.5})
                   .empty());
}

BOOST_AUTO_TEST_CASE(a_drain_within_the_clocks_bound_reads_as_the_cluster_says) {
  // n0 within 1 ms of the coordinator's clock, n1 within 2 ms: 3 ms either way is nothing.
  wall_transfers w(c, {0.001, 0.002}, quick);
  BOOST_TEST(w.clock_error_s(0, 1) == 0.003, tt::tolerance(1e-12));
  BOOST_TEST(w.clock_error_s(0, 3) == 0.003, tt::tolerance(1e-12)); // n3: the largest bound
  calibrate(w);
  const auto near = w.observe(message(10, 0.0125));
  BOOST_TEST_REQUIRE(near.size() == 1u);
  BOOST_TEST(bandwidth_of(near[0]) == bandwidth, tt::tolerance(1e-6));
  // A drop shows, less the bound: 100 ms read as 97.
  const auto slow = w.observe(message(11, 0.1));
  BOOST_TEST_REQUIRE(slow.size() == 1u);
  BOOST_TEST(bandwidth_of(slow[0]) == bytes / 0.097, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(the_pair_noise_widens_what_reads_as_the_cluster_says) {
  wall_transfers w(c, {0, 0}, quick);
  w.observe(message(0, 0.5)); // warm-up
  // Costs of 4, 5 and 6 ms: median 5 ms, median deviation 1 ms, noise 1.48 ms.
  for (int k = 0; k < 3; ++k)
    w.observe(message(1.0 + k, 0.009 + 0.001 * k));
  BOOST_TEST_REQUIRE(w.noise_s(0, 1).has_value());
  BOOST_TEST(*w.noise_s(0, 1) == 1.4826e-3, tt::tolerance(1e-9));
  BOOST_TEST(*w.message_cost_s(0, 1) == 0.005, tt::tolerance(1e-9));
  // 4 ms over the cluster's 10 is within 3 x 1.48 ms: the cluster's bandwidth.
  const auto near = w.observe(message(10, 0.014));
  BOOST_TEST_REQUIRE(near.size() == 1u);
  BOOST_TEST(bandwidth_of(near[0]) == bandwidth, tt::tolerance(1e-6));
  const auto slow = w.observe(message(11, 0.05));
  BOOST_TEST_REQUIRE(slow.size() == 1u);
  BOOST_TEST(bandwidth_of(slow[0]) == bytes / (0.05 - 3 * 1.4826e-3), tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(a_message_too_small_to_show_a_drift_cannot_clear_a_slow_pair) {
  auto options = quick;
  options.drift_samples = 2;
  wall_transfers w(c, {0, 0}, options);
  w.observe(message(0, 0.5)); // warm-up
  // Costs of 4, 5 and 6 ms: noise 1.48 ms, an allowance of 4.45 ms.
  for (int k = 0; k < 3; ++k)
    w.observe(message(1.0 + k, 0.009 + 0.001 * k));
  // A tenth of the bytes drains in 1 ms: at 0.67 of the bandwidth it would take 1.5 ms,
  // within the allowance. On a calm pair it still reads calm: a larger drop would show.
  const auto small = [&](double send, double drain) {
    auto m = message(send, drain);
    m.parts[0].bytes = bytes / 10;
    return m;
  };
  BOOST_TEST_REQUIRE(w.observe(small(10, 0.001)).size() == 1u);
  // 10x slower, beyond the allowance: slow whatever its size. Twice in a row: a slow pair.
  for (double t : {11.0, 12.0}) {
    const auto seen = w.observe(small(t, 0.01));
    BOOST_TEST_REQUIRE(seen.size() == 1u);
    BOOST_TEST(bandwidth_of(seen[0]) < bandwidth / 1.5);
  }
  // Now a small calm message proves nothing: left out.
  BOOST_TEST(w.observe(small(13, 0.001)).empty());
  // Whole messages read calm twice: the pair is calm again, and small ones count once more.
  BOOST_TEST(w.observe(message(14, 0.010)).size() == 1u);
  BOOST_TEST(w.observe(message(15, 0.010)).size() == 1u);
  BOOST_TEST(w.observe(small(16, 0.001)).size() == 1u);
}

BOOST_AUTO_TEST_CASE(informative_bytes_is_the_smallest_message_that_can_show_a_drift) {
  auto options = quick;
  options.drift_samples = 1;
  wall_transfers w(c, {0.001, 0.002}, options);
  BOOST_TEST(w.informative_bytes(0, 1, bandwidth) == 0.0); // still calibrating
  calibrate(w); // noise 0: the allowance is the clocks' 3 ms
  const double floor = w.informative_bytes(0, 1, bandwidth);
  BOOST_TEST(floor == bandwidth * 0.003 / (1 / 0.67 - 1), tt::tolerance(1e-9));
  BOOST_TEST_REQUIRE(w.observe(message(10, 0.1)).size() == 1u); // slow: the pair reads slow
  // Just below the floor, a calm reading is left out; just above, it counts.
  auto below = message(11, 0.99 * floor / bandwidth);
  below.parts[0].bytes = 0.99 * floor;
  BOOST_TEST(w.observe(below).empty());
  auto above = message(12, 1.01 * floor / bandwidth);
  above.parts[0].bytes = 1.01 * floor;
  BOOST_TEST(w.observe(above).size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
