// The adapter's per-link statistics: counted per link, the first transfer's devices kept,
// busy time from drain spans, mean delay from send to arrival, bandwidth over busy time.
#include <boost/test/unit_test.hpp>

#include "runtime/adapt/link_statistics.hpp"

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(link_statistics_of_transfers)

BOOST_AUTO_TEST_CASE(each_link_sums_its_own_transfers) {
  link_statistics stats;
  stats.add({.link = 3,
             .from = 0,
             .to = 4,
             .bytes = 1000,
             .send_s = 0.0,
             .start_s = 0.5,
             .drained_s = 1.5,
             .arrival_s = 2.0});
  stats.add({.link = 1,
             .from = 2,
             .to = 1,
             .bytes = 10,
             .send_s = 1.0,
             .start_s = 1.0,
             .drained_s = 1.0,
             .arrival_s = 1.25});
  stats.add({.link = 3,
             .from = 5,
             .to = 6,
             .bytes = 3000,
             .send_s = 1.0,
             .start_s = 1.5,
             .drained_s = 2.5,
             .arrival_s = 4.0});
  const auto& links = stats.links();
  BOOST_TEST(links.size() == 2u);
  BOOST_TEST(links.begin()->first == 1); // by link id

  const auto& l = links.at(3);
  BOOST_TEST(l.link == 3);
  BOOST_TEST(l.from == 0); // the first transfer's devices, not the latest
  BOOST_TEST(l.to == 4);
  BOOST_TEST(l.transfers == 2);
  BOOST_TEST(l.bytes == 4000.0);
  BOOST_TEST(l.busy_s == 2.0);
  BOOST_TEST(l.delay_s == 5.0);
  BOOST_TEST(l.mean_delay_s() == 2.5);
  BOOST_TEST(l.bandwidth_Bps() == 2000.0);

  const auto& idle = links.at(1); // drained at once: no busy time, no bandwidth
  BOOST_TEST(idle.busy_s == 0.0);
  BOOST_TEST(idle.bandwidth_Bps() == 0.0);
  BOOST_TEST(idle.mean_delay_s() == 0.25);
}

BOOST_AUTO_TEST_CASE(a_link_never_used_has_no_entry) {
  link_statistics stats;
  BOOST_TEST(stats.links().empty());
  BOOST_TEST(link_totals{}.mean_delay_s() == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
