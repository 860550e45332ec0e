#include "runtime/cluster/liveness.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(liveness)

BOOST_AUTO_TEST_CASE(a_peer_unheard_past_the_timeout_is_silent) {
  const auto t0 = liveness_clock::time_point{} + 100s;
  const auto now = t0 + 2s;
  const auto v = judge_liveness(now - 250ms, now, {now - 100ms, t0, now - 1400ms}, 1500ms);
  BOOST_CHECK(v.suspended == liveness_clock::duration{});
  BOOST_CHECK((v.silent == std::vector<size_t>{1}));
}

BOOST_AUTO_TEST_CASE(a_node_whose_own_ticks_stopped_blames_no_peer) {
  const auto t0 = liveness_clock::time_point{} + 100s;
  const auto now = t0 + 10s; // stopped for ten seconds after the tick at t0
  const auto v = judge_liveness(t0, now, {t0, t0 - 100ms}, 1500ms);
  BOOST_CHECK(v.silent.empty());
  BOOST_CHECK(v.suspended == 10s);
  // A tick late by less than the timeout is no suspension.
  const auto late = judge_liveness(now - 1400ms, now, {now - 1600ms}, 1500ms);
  BOOST_CHECK(late.suspended == liveness_clock::duration{});
  BOOST_CHECK((late.silent == std::vector<size_t>{0}));
}

BOOST_AUTO_TEST_SUITE_END()
