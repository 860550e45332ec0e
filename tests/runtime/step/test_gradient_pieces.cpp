#include "runtime/step/gradient_pieces.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using deepcee::runtime::gradient_pieces;

namespace {

std::vector<float> iota(size_t n, float from) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

/// The message add() throws for a piece, or "" when it takes it.
std::string refusal(gradient_pieces& g, int64_t step, int64_t offset, std::vector<float> piece,
                    size_t total) {
  try {
    g.add(step, offset, std::move(piece), total);
    return {};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(gradient_pieces_assembly)

BOOST_AUTO_TEST_CASE(whole_gradients_are_returned_at_once) {
  gradient_pieces g;
  auto whole = g.add(4, 0, iota(6, 1), 6);
  BOOST_REQUIRE(whole.has_value());
  BOOST_TEST((*whole == iota(6, 1)));
  BOOST_TEST(g.size() == 0u);
  BOOST_TEST(g.unfinished(4, 6).empty());
}

BOOST_AUTO_TEST_CASE(pieces_in_order_are_joined_once_the_last_is_there) {
  gradient_pieces g;
  const auto all = iota(10, 0);
  BOOST_TEST(!g.add(2, 0, {all.begin(), all.begin() + 4}, 10).has_value());
  BOOST_TEST(g.size() == 4u);
  BOOST_TEST(g.step() == 2);
  BOOST_TEST(!g.add(2, 4, {all.begin() + 4, all.begin() + 7}, 10).has_value());
  auto joined = g.add(2, 7, {all.begin() + 7, all.end()}, 10);
  BOOST_REQUIRE(joined.has_value());
  BOOST_TEST((*joined == all));
  BOOST_TEST(g.size() == 0u); // a new series may start
  BOOST_TEST(g.unfinished(3, 10).empty());
}

BOOST_AUTO_TEST_CASE(a_piece_out_of_order_is_refused_naming_what_was_expected) {
  gradient_pieces g;
  BOOST_TEST(!g.add(7, 0, {1.0f, 2.0f}, 10).has_value());
  BOOST_TEST(refusal(g, 7, 5, {1.0f}, 10) ==
             "gradients of step 7 from 5 (1 values): expected step 7 from 2 of 10");
  // Another step's piece at the next offset is refused too.
  BOOST_TEST(refusal(g, 8, 2, {1.0f}, 10) ==
             "gradients of step 8 from 2 (1 values): expected step 7 from 2 of 10");
  // A piece running past the end.
  BOOST_TEST(refusal(g, 7, 2, iota(9, 0), 10) ==
             "gradients of step 7 from 2 (9 values): expected step 7 from 2 of 10");
  // The series is left as it was: the right next piece still completes it.
  BOOST_TEST(g.size() == 2u);
  auto joined = g.add(7, 2, iota(8, 3), 10);
  BOOST_REQUIRE(joined.has_value());
  BOOST_TEST(joined->size() == 10u);
  BOOST_TEST((*joined)[0] == 1.0f);
  BOOST_TEST((*joined)[2] == 3.0f);
}

BOOST_AUTO_TEST_CASE(a_piece_before_any_series_is_refused) {
  gradient_pieces g;
  BOOST_TEST(refusal(g, 0, 3, {1.0f}, 10) ==
             "gradients of step 0 from 3 (1 values): expected step -1 from 0 of 10");
}

BOOST_AUTO_TEST_CASE(offset_zero_restarts_the_series) {
  gradient_pieces g;
  BOOST_TEST(!g.add(1, 0, {1.0f, 2.0f, 3.0f}, 6).has_value());
  BOOST_TEST(!g.add(2, 0, {9.0f}, 6).has_value()); // step 1 abandoned
  BOOST_TEST(g.step() == 2);
  BOOST_TEST(g.size() == 1u);
  auto joined = g.add(2, 1, iota(5, 10), 6);
  BOOST_REQUIRE(joined.has_value());
  BOOST_TEST((*joined == std::vector<float>{9, 10, 11, 12, 13, 14}));
  // A too large first piece restarts, then is refused: the series is empty, of its step.
  BOOST_TEST(refusal(g, 5, 0, iota(7, 0), 6) ==
             "gradients of step 5 from 0 (7 values): expected step 5 from 0 of 6");
  BOOST_TEST(g.size() == 0u);
  BOOST_TEST(g.step() == 5);
}

BOOST_AUTO_TEST_CASE(whole_gradients_drop_an_unfinished_series) {
  gradient_pieces g;
  BOOST_TEST(!g.add(3, 0, {1.0f, 2.0f}, 4).has_value());
  BOOST_TEST(g.add(4, 0, iota(4, 0), 4).has_value());
  BOOST_TEST(g.size() == 0u);
  BOOST_TEST(g.unfinished(4, 4).empty());
}

BOOST_AUTO_TEST_CASE(an_unfinished_series_blocks_the_optimizer_step) {
  gradient_pieces g;
  BOOST_TEST(!g.add(7, 0, {1.0f, 2.0f}, 10).has_value());
  BOOST_TEST(g.unfinished(7, 10) == "step 7: gradients of step 7 incomplete (2 of 10 values)");
  BOOST_TEST(g.add(7, 2, iota(8, 0), 10).has_value());
  BOOST_TEST(g.unfinished(7, 10).empty());
}

BOOST_AUTO_TEST_SUITE_END()
