#include "runtime/data/byte_tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using deepcee::runtime::byte_tokenizer;

BOOST_AUTO_TEST_SUITE(byte_tokenizer_tests)

BOOST_AUTO_TEST_CASE(every_byte_round_trips) {
  std::string all;
  for (int b = 0; b < 256; ++b)
    all.push_back(static_cast<char>(b));
  const std::vector<int32_t> tokens = byte_tokenizer::encode(all);
  BOOST_TEST_REQUIRE(tokens.size() == 256u);
  for (int b = 0; b < 256; ++b)
    BOOST_TEST(tokens[b] == b);
  BOOST_TEST(byte_tokenizer::decode(tokens) == all);
}

BOOST_AUTO_TEST_CASE(utf8_text_round_trips_byte_by_byte) {
  const std::string text = "Grüße, 世界!\n%\n";
  const auto tokens = byte_tokenizer::encode(text);
  BOOST_TEST(tokens.size() == text.size());
  BOOST_TEST(byte_tokenizer::decode(tokens) == text);
  BOOST_TEST(byte_tokenizer::vocab_size == 256);
  BOOST_TEST(byte_tokenizer::encode("").empty());
}

BOOST_AUTO_TEST_CASE(decode_rejects_tokens_outside_the_vocabulary) {
  const std::vector<int32_t> bad_high = {65, 256};
  const std::vector<int32_t> bad_low = {-1};
  BOOST_CHECK_THROW(byte_tokenizer::decode(bad_high), std::out_of_range);
  BOOST_CHECK_THROW(byte_tokenizer::decode(bad_low), std::out_of_range);
}

BOOST_AUTO_TEST_SUITE_END()
