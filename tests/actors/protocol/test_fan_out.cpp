// Requests sent to several actors at once: every answer in the order asked, once; the
// first error once; nothing after an error; an empty fan-out finishes at once.
#include "actors/protocol/fan_out.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/sec.hpp>

#include <cstdint>
#include <vector>

using deepcee::actors::make_fan_in;

BOOST_AUTO_TEST_SUITE(fan_out_requests)

BOOST_AUTO_TEST_CASE(every_answer_arrives_in_the_order_asked_after_the_last_one) {
  std::vector<int64_t> seen;
  int calls = 0;
  auto all = make_fan_in<int64_t>(
      3,
      [&](std::vector<int64_t>& xs) {
        ++calls;
        seen = xs;
      },
      [&](caf::error&) { BOOST_FAIL("no error expected"); });
  int64_t two = 20, zero = 0, one = 10;
  all->answer(2)(two);
  all->answer(0)(zero);
  BOOST_TEST(calls == 0);
  all->answer(1)(one);
  BOOST_TEST(calls == 1);
  BOOST_TEST(seen == (std::vector<int64_t>{0, 10, 20}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_first_error_is_reported_once_and_nothing_after_it) {
  int errors = 0, alls = 0;
  auto all = make_fan_in<int64_t>(
      2, [&](std::vector<int64_t>&) { ++alls; }, [&](caf::error&) { ++errors; });
  caf::error e = caf::make_error(caf::sec::request_timeout);
  int64_t x = 1;
  all->failure()(e);
  all->failure()(e);
  all->answer(0)(x);
  all->answer(1)(x);
  BOOST_TEST(errors == 1);
  BOOST_TEST(alls == 0);
}

BOOST_AUTO_TEST_CASE(an_empty_fan_out_finishes_at_once) {
  int alls = 0;
  auto all = make_fan_in<int64_t>(
      0, [&](std::vector<int64_t>& xs) { alls += xs.empty() ? 1 : 100; }, [&](caf::error&) {});
  all->finish_if_empty();
  all->finish_if_empty();
  BOOST_TEST(alls == 1);
}

BOOST_AUTO_TEST_SUITE_END()
