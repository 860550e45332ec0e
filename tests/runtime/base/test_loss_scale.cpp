// The loss normalization: one count of tokens per step, the devices' scale and the
// coordinator's mean agree with each other and with the plain formula.
#include <boost/test/unit_test.hpp>

#include "runtime/base/loss_scale.hpp"

#include <cstdint>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(loss_normalization)

BOOST_AUTO_TEST_CASE(a_step_trains_on_its_global_batch_times_its_context) {
  BOOST_TEST(tokens_per_step(8, 64) == 512);
  BOOST_TEST(tokens_per_step(1, 1) == 1);
  // Large batches do not overflow an int: the count is 64-bit.
  BOOST_TEST(tokens_per_step(1 << 20, 1 << 12) == (int64_t{1} << 32));
}

BOOST_AUTO_TEST_CASE(the_scale_is_one_over_the_tokens_in_float) {
  BOOST_TEST(loss_scale(8, 64) == 1.0f / 512.0f);
  BOOST_TEST(loss_scale(3, 7) == 1.0f / static_cast<float>(21));
  BOOST_TEST(loss_scale(1, 1) == 1.0f);
}

BOOST_AUTO_TEST_CASE(the_mean_divides_the_sum_by_the_tokens_in_double) {
  BOOST_TEST(mean_loss(1024.0, 8, 64) == 2.0);
  BOOST_TEST(mean_loss(1.0, 3, 7) == 1.0 / 21.0);
  BOOST_TEST(mean_loss(0.0, 3, 7) == 0.0);
  // Scaled token losses summed give the mean: 21 tokens of loss 2, each scaled by 1/21.
  double scaled = 0;
  for (int k = 0; k < 21; ++k)
    scaled += 2.0 * static_cast<double>(loss_scale(3, 7));
  BOOST_TEST(scaled == mean_loss(42.0, 3, 7), boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()
