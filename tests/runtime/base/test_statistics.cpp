#include "runtime/base/statistics.hpp"

#include <boost/test/unit_test.hpp>

using deepcee::runtime::median;

BOOST_AUTO_TEST_SUITE(statistics_tests)

BOOST_AUTO_TEST_CASE(median_of_odd_and_even_counts) {
  BOOST_TEST(median({3, 1, 2}) == 2.0);
  BOOST_TEST(median({4, 1, 3, 2}) == 2.5);
  BOOST_TEST(median({}) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
