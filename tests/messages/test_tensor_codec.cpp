#include "messages/tensor_codec.hpp"
#include "runtime/base/model_spec.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace deepcee::messages;

namespace {

std::vector<float> wide_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-10.0f, 10.0f);
  std::uniform_int_distribution<int> sign(0, 1);
  std::vector<float> v(n);
  for (auto& x : v)
    x = (sign(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
  return v;
}

std::vector<float> round_trip(const std::vector<float>& v, int64_t rows, int64_t cols,
                              tensor_dtype d) {
  std::vector<uint8_t> bytes(payload_bytes(d, rows, cols));
  compress(v, rows, cols, d, bytes);
  std::vector<float> out(v.size());
  decompress(bytes, rows, cols, d, out);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tensor_codec)

BOOST_AUTO_TEST_CASE(fp16_round_trips_every_half_exactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f))
      BOOST_TEST(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
    else if (fp32_to_fp16(f) != h)
      BOOST_FAIL("half " << h << " came back as " << fp32_to_fp16(f));
  }
}

BOOST_AUTO_TEST_CASE(fp16_rounds_to_nearest_even_and_saturates_to_infinity) {
  BOOST_TEST(fp32_to_fp16(1.0f) == 0x3C00);
  BOOST_TEST(fp32_to_fp16(1.0f + 0x1p-11f) == 0x3C00);     // tie, even stays
  BOOST_TEST(fp32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3C02); // tie, rounds up to even
  BOOST_TEST(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
  BOOST_TEST(fp32_to_fp16(65504.0f) == 0x7BFF);
  BOOST_TEST(fp32_to_fp16(70000.0f) == 0x7C00);
  BOOST_TEST(fp32_to_fp16(-std::numeric_limits<float>::infinity()) == 0xFC00);
  BOOST_TEST(fp32_to_fp16(0x1p-24f) == 0x0001); // smallest subnormal
  BOOST_TEST(fp32_to_fp16(0x1p-26f) == 0x0000);
  BOOST_TEST(std::isnan(fp16_to_fp32(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
#if defined(__FLT16_MAX__)
  // Agrees with the compiler's own conversion on many values.
  for (float x : wide_values(100000, 9))
    BOOST_REQUIRE_EQUAL(fp32_to_fp16(x), std::bit_cast<uint16_t>(static_cast<_Float16>(x)));
#endif
}

BOOST_AUTO_TEST_CASE(fp16_relative_error_is_below_1e3) {
  const auto v = wide_values(4096, 1);
  const auto out = round_trip(v, 64, 64, tensor_dtype::f16);
  for (size_t i = 0; i < v.size(); ++i)
    BOOST_REQUIRE_LE(std::fabs(out[i] - v[i]), 1e-3f * std::fabs(v[i]));
}

BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_even) {
  auto from_bits = [](uint32_t u) { return std::bit_cast<float>(u); };
  BOOST_TEST(fp32_to_bf16(from_bits(0x3F808000u)) == 0x3F80); // tie, even stays
  BOOST_TEST(fp32_to_bf16(from_bits(0x3F818000u)) == 0x3F82); // tie, up to even
  BOOST_TEST(fp32_to_bf16(from_bits(0x3F808001u)) == 0x3F81);
  BOOST_TEST(fp32_to_bf16(from_bits(0x7F7FFFFFu)) == 0x7F80); // max float rounds to inf
  BOOST_TEST(std::isnan(bf16_to_fp32(fp32_to_bf16(from_bits(0x7F800001u)))));
  BOOST_TEST(bf16_to_fp32(0x3F80) == 1.0f);
}

BOOST_AUTO_TEST_CASE(bf16_relative_error_is_below_8e3) {
  const auto v = wide_values(4096, 2);
  const auto out = round_trip(v, 32, 128, tensor_dtype::bf16);
  for (size_t i = 0; i < v.size(); ++i)
    BOOST_REQUIRE_LE(std::fabs(out[i] - v[i]), 8e-3f * std::fabs(v[i]));
}

BOOST_AUTO_TEST_CASE(int8_error_is_at_most_half_a_scale_per_row) {
  const int64_t rows = 48, cols = 100;
  std::vector<float> v(rows * cols);
  std::mt19937 rng(3);
  for (int64_t r = 0; r < rows; ++r) {
    // Rows of very different magnitudes: each row needs its own scale.
    std::normal_distribution<float> dist(0.0f, std::exp2(float(r % 16) - 8.0f));
    for (int64_t c = 0; c < cols; ++c)
      v[r * cols + c] = dist(rng);
  }
  std::fill(v.begin() + 5 * cols, v.begin() + 6 * cols, 0.0f); // an all-zero row
  std::vector<uint8_t> bytes(payload_bytes(tensor_dtype::int8, rows, cols));
  compress(v, rows, cols, tensor_dtype::int8, bytes);
  std::vector<float> out(v.size());
  decompress(bytes, rows, cols, tensor_dtype::int8, out);
  for (int64_t r = 0; r < rows; ++r) {
    float scale;
    std::memcpy(&scale, bytes.data() + r * 4, 4);
    float absmax = 0;
    for (int64_t c = 0; c < cols; ++c)
      absmax = std::max(absmax, std::fabs(v[r * cols + c]));
    BOOST_REQUIRE_CLOSE(scale, absmax / 127.0f, 1e-4);
    for (int64_t c = 0; c < cols; ++c)
      BOOST_REQUIRE_LE(std::fabs(out[r * cols + c] - v[r * cols + c]),
                       scale / 2 * (1 + 1e-5f) + 1e-30f);
  }
  for (int64_t c = 0; c < cols; ++c)
    BOOST_REQUIRE_EQUAL(out[5 * cols + c], 0.0f);
}

BOOST_AUTO_TEST_CASE(payload_bytes_match_the_cost_model) {
  const auto spec = deepcee::runtime::make_model_spec(*deepcee::runtime::model_preset("small"));
  const int64_t rows_per_sample = spec.config.context;
  const int64_t cols = spec.config.d_model;
  using deepcee::runtime::compression;
  const std::pair<tensor_dtype, compression> pairs[] = {{tensor_dtype::f32, compression::none},
                                                        {tensor_dtype::f16, compression::fp16},
                                                        {tensor_dtype::bf16, compression::bf16},
                                                        {tensor_dtype::int8, compression::int8}};
  for (int micro : {1, 3, 8})
    for (const auto& [d, c] : pairs)
      BOOST_TEST(payload_bytes(d, micro * rows_per_sample, cols) == spec.transfer_bytes(micro, c));
  BOOST_TEST(payload_bytes(tensor_dtype::int8, 10, 6) == 10 * 6 + 10 * 4);
  BOOST_TEST(payload_bytes(tensor_dtype::f16, 10, 6) == 10 * 6 * 2);
  BOOST_TEST(payload_bytes(tensor_dtype::f32, -1, 6) == -1);
  BOOST_TEST(payload_bytes(tensor_dtype::f32, int64_t{1} << 40, int64_t{1} << 40) == -1);
}

BOOST_AUTO_TEST_CASE(sizes_that_disagree_throw) {
  std::vector<float> v(12);
  std::vector<uint8_t> bytes(24);
  BOOST_CHECK_THROW(compress(v, 3, 4, tensor_dtype::f32, bytes), std::invalid_argument);
  BOOST_CHECK_NO_THROW(compress(v, 3, 4, tensor_dtype::f16, bytes));
  BOOST_CHECK_THROW(decompress(bytes, 2, 4, tensor_dtype::f16, v), std::invalid_argument);
  BOOST_TEST(!dtype_from_index(4).has_value());
  BOOST_TEST((*dtype_from_index(3) == tensor_dtype::int8));
}

BOOST_AUTO_TEST_SUITE_END()
