// The host's codec passes timed as `deepcee profile` times them for the profile's [[codec]]
// rows: every compressed encoding gives a positive, finite cost per fp32 byte, and what
// cannot be timed is refused.
#include "messages/codec_timing.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <stdexcept>

using namespace deepcee::messages;

BOOST_AUTO_TEST_SUITE(codec_timing_suite)

BOOST_AUTO_TEST_CASE(each_encoding_costs_a_positive_time_per_byte) {
  for (auto d : {tensor_dtype::f16, tensor_dtype::bf16, tensor_dtype::int8}) {
    const auto t = time_codec(d, 256, 128, 1, 3);
    BOOST_TEST(t.encode_s_per_byte > 0.0);
    BOOST_TEST(t.decode_s_per_byte > 0.0);
    // A pass over 128 KiB of fp32 takes far less than a second on any host.
    BOOST_TEST(t.encode_s_per_byte * 256 * 128 * 4 < 1.0);
    BOOST_TEST(t.decode_s_per_byte * 256 * 128 * 4 < 1.0);
    BOOST_TEST(std::isfinite(t.encode_s_per_byte));
  }
}

BOOST_AUTO_TEST_CASE(what_cannot_be_timed_is_refused) {
  BOOST_CHECK_THROW(time_codec(tensor_dtype::f32, 4, 4), std::invalid_argument);
  BOOST_CHECK_THROW(time_codec(tensor_dtype::int8, 0, 4), std::invalid_argument);
  BOOST_CHECK_THROW(time_codec(tensor_dtype::int8, 4, -1), std::invalid_argument);
  BOOST_CHECK_THROW(time_codec(tensor_dtype::int8, 4, 4, 0, 0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
