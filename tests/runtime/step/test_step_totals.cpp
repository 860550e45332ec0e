// A step's totals from its stages' reports: the mean loss over the global batch's tokens,
// the norm of all gradients, the latest end, each pipeline's ends in report order.
#include <boost/test/unit_test.hpp>

#include "runtime/step/step_totals.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(step_totals_of_reports)

BOOST_AUTO_TEST_CASE(the_loss_is_the_mean_over_the_tokens_and_the_norm_the_root_of_squares) {
  // Two pipelines of two stages: only last stages carry losses, only pipeline 0 squares.
  const std::vector<stage_totals> stages{
      {.pipeline = 0, .end_s = 1.5, .loss_sum = 0, .grad_sum_squares = 9, .dropped = 1},
      {.pipeline = 0, .end_s = 2.0, .loss_sum = 30, .grad_sum_squares = 16, .dropped = 0},
      {.pipeline = 1, .end_s = 2.5, .loss_sum = 0, .grad_sum_squares = 0, .dropped = 2},
      {.pipeline = 1, .end_s = 1.0, .loss_sum = 34, .grad_sum_squares = 0, .dropped = 0},
  };
  const auto t = total_of(stages, 2, 4, 8); // 32 tokens
  BOOST_TEST(t.loss == 64.0 / 32.0);
  BOOST_TEST(t.grad_norm == 5.0);
  BOOST_TEST(t.compute_end_s == 2.5);
  BOOST_TEST(t.dropped == 3);
  BOOST_TEST(t.pipeline_ends.size() == 2u);
  BOOST_TEST(t.pipeline_ends[0] == (std::vector<double>{1.5, 2.0}),
             boost::test_tools::per_element());
  BOOST_TEST(t.pipeline_ends[1] == (std::vector<double>{2.5, 1.0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(no_report_gives_zeros_and_an_empty_end_list_per_pipeline) {
  const auto t = total_of({}, 3, 2, 2);
  BOOST_TEST(t.loss == 0.0);
  BOOST_TEST(t.grad_norm == 0.0);
  BOOST_TEST(t.compute_end_s == 0.0);
  BOOST_TEST(t.pipeline_ends.size() == 3u);
  for (const auto& ends : t.pipeline_ends)
    BOOST_TEST(ends.empty());
}

BOOST_AUTO_TEST_CASE(a_report_of_a_pipeline_the_step_lacks_is_refused) {
  stage_totals lost;
  lost.pipeline = 2;
  const std::vector<stage_totals> stages{lost};
  BOOST_CHECK_THROW(total_of(stages, 2, 1, 1), std::out_of_range);
}

BOOST_AUTO_TEST_SUITE_END()
