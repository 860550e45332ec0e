// Shaped wall time's hold: the modelled arrival on the shared steady clock crosses with an
// activation or gradient, a gradient share and a ring chunk, and a negative one is refused.
#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

namespace {

constexpr int64_t some_steady_ns = 987'654'321'012'345;

template <class R>
void check_refused_deliver_at(const R& r) {
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().what.find("deliver_at") != std::string::npos, r.error().what);
}

} // namespace

BOOST_AUTO_TEST_SUITE(shaped_fields)

BOOST_AUTO_TEST_CASE(the_hold_time_crosses_with_every_shaped_message) {
  auto h = sample_header();
  h.deliver_at_ns = some_steady_ns;
  const auto values = random_values(3 * 5 * 8, 41);
  BOOST_TEST(decode_tensor(encode_tensor(h, values)).value().header.deliver_at_ns ==
             some_steady_ns);
  // Written in place by the devices, then finished with the times: the same bytes.
  tensor_draft draft(sample_header());
  std::copy(values.begin(), values.end(), draft.payload().begin());
  const auto finished = draft.finish(h.send_time, h.arrival_time, h.deliver_at_ns);
  BOOST_TEST((finished == encode_tensor(h, values)));

  gradient_share share{12, 1, 0, 2, 4, random_values(6, 42), some_steady_ns};
  BOOST_TEST((decode_gradient_share(encode(share)).value() == share));
  ring_chunk chunk{12, 1, random_values(5, 43), some_steady_ns};
  BOOST_TEST((decode_ring_chunk(encode(chunk)).value() == chunk));
}

BOOST_AUTO_TEST_CASE(a_negative_hold_time_is_refused_naming_it) {
  auto h = sample_header();
  h.deliver_at_ns = -1;
  check_refused_deliver_at(decode_tensor(encode_tensor(h, random_values(3 * 5 * 8, 44))));
  check_refused_deliver_at(
      decode_gradient_share(encode(gradient_share{1, 0, 0, 0, 2, random_values(4, 45), -5})));
  check_refused_deliver_at(decode_ring_chunk(encode(ring_chunk{1, 0, random_values(4, 46), -5})));
}

BOOST_AUTO_TEST_SUITE_END()
