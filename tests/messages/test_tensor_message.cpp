#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

namespace {

bool inside(std::span<const uint8_t> view, const uint8_t* begin, size_t size) {
  return view.data() >= begin && view.data() + view.size() <= begin + size;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tensor_message_views)

BOOST_AUTO_TEST_CASE(encoded_tensor_is_one_segment_with_little_overhead) {
  for (auto d : {tensor_dtype::f32, tensor_dtype::f16, tensor_dtype::bf16, tensor_dtype::int8}) {
    auto h = sample_header(d);
    h.shape = {4, 64, 128};
    const auto bytes = encode_tensor(h, random_values(4 * 64 * 128, 1));
    uint32_t table[2];
    std::memcpy(table, bytes.data(), 8);
    // A single segment means the payload was written straight into the returned buffer.
    BOOST_TEST(table[0] == 0u);
    BOOST_TEST(size_t(table[1]) * 8 + 8 == bytes.size());
    const auto payload = payload_bytes(d, 4 * 64, 128);
    BOOST_TEST(bytes.size() >= size_t(payload));
    // 136: the header's 17 words (deliverAt, shaped wall time's hold, took the 17th).
    BOOST_TEST(bytes.size() - size_t(payload) <= 136u,
               "header overhead " << bytes.size() - payload);
  }
}

BOOST_AUTO_TEST_CASE(decoded_payload_is_a_view_into_the_aligned_copy) {
  const auto h = sample_header();
  const auto values = random_values(120, 2);
  const auto bytes = encode_tensor(h, values);
  const auto m = decode_tensor(bytes);
  BOOST_REQUIRE(m.ok());
  BOOST_TEST(inside(m->payload, m->buffer.bytes.data(), m->buffer.bytes.size()));
  BOOST_TEST(m->buffer.bytes.size() == bytes.size());
  BOOST_TEST(!inside(m->payload, bytes.data(), bytes.size())); // the one copy: aligned buffer
  BOOST_TEST(reinterpret_cast<uintptr_t>(m->payload.data()) % 8 == 0u);
  BOOST_REQUIRE(m->payload.size() == values.size() * sizeof(float));
  BOOST_TEST(std::memcmp(m->payload.data(), values.data(), m->payload.size()) == 0);
}

BOOST_AUTO_TEST_CASE(adopted_vector_is_not_copied_at_all) {
  const auto values = random_values(120, 3);
  auto bytes = encode_tensor(sample_header(), values);
  const uint8_t* begin = bytes.data();
  const size_t size = bytes.size();
  BOOST_REQUIRE(reinterpret_cast<uintptr_t>(begin) % 8 == 0u);
  const auto m = decode_tensor(std::move(bytes));
  BOOST_REQUIRE(m.ok());
  BOOST_TEST(inside(m->payload, begin, size));
  BOOST_TEST(m->buffer.bytes.data() == begin);
}

BOOST_AUTO_TEST_CASE(copies_share_the_buffer_and_keep_it_alive) {
  const auto values = random_values(120, 4);
  tensor_message copy;
  {
    auto bytes = encode_tensor(sample_header(), values);
    auto m = decode_tensor(std::move(bytes));
    BOOST_REQUIRE(m.ok());
    copy = *m;
    BOOST_TEST(copy.buffer.owner.get() == m->buffer.owner.get());
    BOOST_TEST(copy.payload.data() == m->payload.data());
  }
  // The result and its bytes are gone; the copy still holds the buffer.
  BOOST_TEST(copy.buffer.owner.use_count() == 1);
  std::vector<float> out(120);
  decompress(copy, out);
  BOOST_TEST(out == values, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(host_payload_is_sent_as_is) {
  auto h = sample_header(tensor_dtype::bf16);
  std::vector<uint8_t> payload(payload_bytes(tensor_dtype::bf16, 15, 8));
  for (size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<uint8_t>(i * 7);
  const auto m = decode_tensor(encode(tensor_message{h, payload, {}}));
  BOOST_REQUIRE(m.ok());
  BOOST_TEST(std::vector<uint8_t>(m->payload.begin(), m->payload.end()) == payload,
             boost::test_tools::per_element());
  BOOST_TEST((m->header == h));
}

BOOST_AUTO_TEST_CASE(unaligned_input_is_copied_into_alignment) {
  const auto bytes = encode_tensor(sample_header(), random_values(120, 5));
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  const std::span<const uint8_t> view(shifted.data() + 1, bytes.size());
  const auto m = decode_tensor(view);
  BOOST_REQUIRE(m.ok());
  BOOST_TEST(reinterpret_cast<uintptr_t>(m->payload.data()) % 8 == 0u);
}

BOOST_AUTO_TEST_CASE(empty_tensor_round_trips) {
  auto h = sample_header();
  h.shape = {0, 8};
  const auto m = decode_tensor(encode_tensor(h, {}));
  BOOST_REQUIRE(m.ok());
  BOOST_TEST(m->payload.empty());
}

BOOST_AUTO_TEST_SUITE_END()
