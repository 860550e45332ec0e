#include "tools/snapshot_board.hpp"

#include "tests/runtime/watch/snapshot_samples.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using namespace deepcee::runtime;
using namespace deepcee::tools;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(snapshot_board_tests)

BOOST_AUTO_TEST_CASE(publish_numbers_versions_and_keeps_the_latest) {
  snapshot_board board;
  BOOST_TEST(!board.latest());
  auto s = deepcee::test::sample_snapshot();
  s.step = 1;
  board.publish(s);
  s.step = 2;
  board.publish(s);
  BOOST_TEST(board.version() == 2u);
  BOOST_TEST(board.latest()->step == 2);
  BOOST_TEST(board.latest()->version == 2u);
}

BOOST_AUTO_TEST_CASE(a_subscriber_gets_the_latest_then_every_new_version_in_order) {
  snapshot_board board;
  auto s = deepcee::test::sample_snapshot();
  board.publish(s);
  auto sub = board.subscribe(8);
  board.publish(s);
  board.publish(s);
  for (uint64_t v = 1; v <= 3; ++v) {
    const auto f = sub->next(0ms);
    BOOST_REQUIRE(f);
    BOOST_TEST(f->version == v);
  }
  BOOST_TEST(!sub->next(1ms));
  BOOST_TEST(sub->dropped() == 0);
}

BOOST_AUTO_TEST_CASE(a_full_queue_drops_and_counts_without_waiting_on_the_reader) {
  snapshot_board board;
  auto slow = board.subscribe(2);
  auto fast = board.subscribe(100);
  const auto s = deepcee::test::sample_snapshot();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i)
    board.publish(s);
  BOOST_TEST((std::chrono::steady_clock::now() - start < 1s));
  BOOST_TEST(slow->dropped() == 48);
  BOOST_TEST(fast->dropped() == 0);
  BOOST_TEST(board.dropped_frames() == 48);
  BOOST_TEST(slow->next(0ms)->version == 1u); // the oldest ones it kept
  BOOST_TEST(slow->next(0ms)->version == 2u);
  board.unsubscribe(slow);
  board.publish(s);
  BOOST_TEST(board.dropped_frames() == 48); // a client gone keeps its count
  BOOST_TEST(board.subscribers() == 1u);
}

BOOST_AUTO_TEST_CASE(close_wakes_a_waiting_reader) {
  snapshot_board board;
  auto sub = board.subscribe(4);
  std::thread closer([&] {
    std::this_thread::sleep_for(50ms);
    board.close();
  });
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(!sub->next(10s));
  BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
  closer.join();
  BOOST_TEST(sub->closed());
  BOOST_TEST(board.subscribe(4)->closed()); // none after close
}

BOOST_AUTO_TEST_CASE(bubble_share_is_the_idle_part_of_the_window) {
  const std::vector<timeline_op> ops{{"F", 0, 0.0, 1.0}, {"B", 0, 2.0, 3.0}};
  BOOST_TEST(bubble_share(ops, 0.0, 4.0) == 0.5);
  BOOST_TEST(bubble_share(ops, 0.0, 2.0) == 0.0); // clamped
  BOOST_TEST(bubble_share({}, 1.0, 1.0) == 0.0);
  std::vector<double> history;
  for (int i = 0; i < 10; ++i)
    push_history(history, i, 4);
  BOOST_TEST(history == (std::vector<double>{6, 7, 8, 9}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
