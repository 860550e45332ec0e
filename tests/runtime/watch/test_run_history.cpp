// The run's history for charts opened late: bounded, and covering the whole run evenly.
#include <boost/test/unit_test.hpp>

#include "runtime/io/job_snapshot_json.hpp"
#include "runtime/watch/run_history.hpp"

#include <nlohmann/json.hpp>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(run_history_tests)

BOOST_AUTO_TEST_CASE(a_short_run_keeps_every_step) {
  thinned_series s(8);
  for (int step = 1; step <= 8; ++step)
    s.add(step, step * 0.5);
  BOOST_REQUIRE(s.points().size() == 8u);
  BOOST_TEST((s.points().front() == series_point{1, 0.5}));
  BOOST_TEST((s.points().back() == series_point{8, 4.0}));
  BOOST_TEST(s.spacing() == 1);
}

BOOST_AUTO_TEST_CASE(a_long_run_stays_bounded_and_covers_its_first_and_last_steps) {
  thinned_series s(8);
  for (int step = 1; step <= 1000; ++step)
    s.add(step, step);
  const auto& p = s.points();
  BOOST_TEST(p.size() <= 8u);
  BOOST_TEST(p.size() >= 4u);
  BOOST_TEST(p.front().step == 1);
  BOOST_TEST(p.back().step > 1000 - 2 * s.spacing()); // the recent past is there
  // Evenly spaced: every gap is the spacing kept at the time, never less than the first's.
  for (size_t i = 1; i < p.size(); ++i)
    BOOST_TEST(p[i].step - p[i - 1].step >= p[1].step - p[0].step);
  BOOST_TEST(s.spacing() >= 1000 / 8);
}

BOOST_AUTO_TEST_CASE(sparse_points_such_as_validations_are_all_kept) {
  thinned_series s(8);
  for (int step = 50; step <= 300; step += 50)
    s.add(step, 2.0);
  BOOST_TEST(s.points().size() == 6u);
}

BOOST_AUTO_TEST_CASE(the_history_as_json_lists_step_value_pairs) {
  BOOST_TEST(nlohmann::json::parse(run_history_to_json(nullptr))["loss"].empty());
  run_history h;
  h.loss.add(1, 5.5);
  h.loss.add(2, 5.25);
  h.link_bandwidth_Bps["a -> b"].add(2, 1.25e6);
  const auto j = nlohmann::json::parse(run_history_to_json(&h));
  BOOST_TEST(j["loss"].size() == 2u);
  BOOST_TEST(j["loss"][1][0].get<int>() == 2);
  BOOST_TEST(j["loss"][1][1].get<double>() == 5.25);
  BOOST_TEST(j["links"]["a -> b"][0][1].get<double>() == 1.25e6);
  BOOST_TEST(j["validation"].empty());
}

BOOST_AUTO_TEST_SUITE_END()
