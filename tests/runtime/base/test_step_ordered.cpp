#include <boost/test/unit_test.hpp>

#include <string>

#include "runtime/base/step_ordered.hpp"

using deepcee::runtime::step_ordered;

BOOST_AUTO_TEST_SUITE(step_ordered_values)

BOOST_AUTO_TEST_CASE(the_value_in_force_is_the_latest_put_at_or_before_the_step) {
  step_ordered<std::string> xs;
  BOOST_TEST(xs.in_force_at(5) == nullptr);
  BOOST_TEST(xs.in_force_at(5, "start") == "start");
  xs.put(3, "a");
  xs.put(7, "b");
  BOOST_TEST(xs.in_force_at(2, "start") == "start");
  BOOST_TEST(xs.in_force_at(3, "start") == "a");
  BOOST_TEST(xs.in_force_at(6, "start") == "a");
  BOOST_TEST(xs.in_force_at(7, "start") == "b");
  BOOST_TEST(*xs.in_force_at(100) == "b");
  xs.put(3, "c"); // a second put for one step replaces the first
  BOOST_TEST(xs.in_force_at(4, "start") == "c");
  BOOST_TEST(xs.size() == 2u);
}

BOOST_AUTO_TEST_CASE(taking_what_is_due_drops_it_and_keeps_later_entries) {
  step_ordered<int> xs;
  BOOST_TEST(!xs.take_due(10).has_value());
  xs.put(2, 20);
  xs.put(4, 40);
  xs.put(9, 90);
  BOOST_TEST(!xs.take_due(1).has_value());
  auto due = xs.take_due(5);
  BOOST_TEST(due.has_value());
  BOOST_TEST(*due == 40); // the latest due, not the first
  BOOST_TEST(xs.size() == 1u);
  BOOST_TEST(!xs.take_due(8).has_value());
  BOOST_TEST(*xs.take_due(9) == 90);
  BOOST_TEST(xs.empty());
}

BOOST_AUTO_TEST_CASE(dropping_through_a_step_keeps_what_comes_after) {
  step_ordered<int> xs;
  xs.put(1, 1);
  xs.put(5, 5);
  xs.put(6, 6);
  xs.drop_through(5);
  BOOST_TEST(xs.size() == 1u);
  BOOST_TEST(xs.in_force_at(5) == nullptr);
  BOOST_TEST(*xs.in_force_at(6) == 6);
}

BOOST_AUTO_TEST_SUITE_END()
