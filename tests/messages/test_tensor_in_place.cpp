// The send path's in-place encoding and dry mode's header-only tensors.
#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

BOOST_AUTO_TEST_SUITE(tensor_in_place)

BOOST_AUTO_TEST_CASE(a_draft_written_in_parts_and_timed_late_gives_encode_tensors_bytes) {
  auto h = sample_header();
  h.shape = {3, 5, 8};
  const auto values = random_values(3 * 5 * 8, 4);
  const auto want = encode_tensor(h, values);
  auto early = h;
  early.send_time = early.arrival_time = 0; // the times are known only when the op ends
  tensor_draft draft(early);
  auto out = draft.payload();
  BOOST_REQUIRE_EQUAL(out.size(), values.size());
  // Two writers, each its own rows (a stage's devices), in either order.
  const size_t half = 2 * 5 * 8;
  std::copy(values.begin() + half, values.end(), out.begin() + half);
  std::copy(values.begin(), values.begin() + half, out.begin());
  const auto got = draft.finish(h.send_time, h.arrival_time);
  BOOST_TEST((got == want));
  auto decoded = decode_tensor(got);
  BOOST_REQUIRE(decoded);
  BOOST_TEST((decoded->header == h));
  BOOST_CHECK_THROW(draft.finish(0, 0), std::logic_error); // handed over once
}

BOOST_AUTO_TEST_CASE(only_f32_is_written_in_place) {
  auto h = sample_header(tensor_dtype::bf16);
  BOOST_CHECK_THROW(tensor_draft{h}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(header_only_tensor_keeps_its_header_and_carries_no_payload) {
  auto h = sample_header();
  h.shape = {64, 1024, 4096}; // 1 GiB as fp32: far more than a message may carry
  const auto bytes = encode_tensor_header(h);
  BOOST_TEST(bytes.size() <= 256u);
  auto decoded = decode_tensor_header(bytes);
  BOOST_REQUIRE(decoded);
  BOOST_TEST((decoded->header == h));
  BOOST_TEST(decoded->payload.empty());
  // Neither kind passes for the other: a header-only tensor is no real one, and a real one
  // is no header-only one.
  BOOST_TEST(!decode_tensor(bytes));
  auto small = sample_header();
  small.shape = {2, 4};
  BOOST_TEST(!decode_tensor_header(encode_tensor(small, random_values(8, 1))));
}

BOOST_AUTO_TEST_CASE(header_only_compressed_tensor_has_no_scales_to_read) {
  // Dry time sends compressed tensors as headers: int8's per-row scales are not there.
  for (auto dtype : {tensor_dtype::int8, tensor_dtype::bf16}) {
    auto h = sample_header(dtype);
    h.shape = {4096, 1024};
    auto decoded = decode_tensor_header(encode_tensor_header(h));
    BOOST_REQUIRE(decoded);
    BOOST_TEST((decoded->header == h));
    BOOST_TEST(decoded->payload.empty());
  }
}

BOOST_AUTO_TEST_SUITE_END()
