#include "transport/handshake.hpp"
#include "transport/sealed_records.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::transport;

namespace {

const std::string token = "0123456789abcdef0123456789abcdef";

nonce filled(uint8_t v) {
  nonce n{};
  n.fill(v);
  return n;
}

/// Runs a handshake between a client and a server holding these tokens; the server's
/// refusal, the client's, or "" when both are done.
struct outcome {
  std::string client, server;
  session_keys client_keys, server_keys;
};

outcome shake(const std::string& client_token, const std::string& server_token) {
  client_handshake c(client_token, filled(1));
  server_handshake s(server_token, filled(2));
  outcome o;
  BOOST_REQUIRE_EQUAL(s.wanted(), hello_bytes);
  auto challenge = s.feed(c.hello());
  BOOST_REQUIRE(!challenge.failed());
  BOOST_REQUIRE_EQUAL(challenge.send.size(), challenge_bytes);
  auto proof = c.answer(challenge.send);
  if (proof.failed()) {
    o.client = proof.refusal;
    return o;
  }
  BOOST_REQUIRE_EQUAL(s.wanted(), proof_bytes);
  auto last = s.feed(proof.send);
  o.server = last.refusal;
  if (!last.failed()) {
    o.client_keys = c.keys();
    o.server_keys = s.keys();
  }
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gate_handshake)

BOOST_AUTO_TEST_CASE(both_sides_with_the_token_agree_on_the_keys) {
  const auto o = shake(token, token);
  BOOST_CHECK_EQUAL(o.client, "");
  BOOST_CHECK_EQUAL(o.server, "");
  BOOST_CHECK(o.client_keys.client_to_server == o.server_keys.client_to_server);
  BOOST_CHECK(o.client_keys.server_to_client == o.server_keys.server_to_client);
  BOOST_CHECK(o.client_keys.client_to_server != o.client_keys.server_to_client);
}

BOOST_AUTO_TEST_CASE(a_wrong_token_is_refused_by_the_side_that_checks_first) {
  const auto o = shake(token, "ffffffffffffffffffffffffffffffff");
  BOOST_CHECK_EQUAL(o.client, "it does not hold the job's token");
}

BOOST_AUTO_TEST_CASE(the_server_refuses_a_proof_that_is_not_the_clients) {
  server_handshake s(token, filled(2));
  client_handshake c(token, filled(1));
  auto challenge = s.feed(c.hello());
  // Reflecting the server's own proof back must not pass as the client's.
  const std::span<const uint8_t> server_mac(challenge.send.data() + magic_bytes + sizeof(nonce),
                                            mac_bytes);
  const auto refused = s.feed(server_mac);
  BOOST_CHECK_EQUAL(refused.refusal, "it does not hold the job's token");
  BOOST_CHECK(!s.done());
  BOOST_CHECK_EQUAL(s.wanted(), 0u);
  BOOST_CHECK_THROW(s.keys(), std::logic_error);
}

BOOST_AUTO_TEST_CASE(bytes_that_are_no_hello_are_refused_without_reading_more) {
  // A CAF BASP header (32 bytes claiming a 4 GiB payload) padded to the hello's size.
  std::vector<uint8_t> caf_header(hello_bytes, 0);
  caf_header[8] = caf_header[9] = caf_header[10] = caf_header[11] = 0xff;
  server_handshake s(token, filled(2));
  const auto r = s.feed(caf_header);
  BOOST_CHECK_EQUAL(r.refusal, "it does not speak deepcee's handshake");
  BOOST_CHECK(r.send.empty());
  BOOST_CHECK_EQUAL(s.wanted(), 0u);
  server_handshake short_read(token, filled(2));
  BOOST_CHECK(short_read.feed(std::vector<uint8_t>(10, 'x')).failed());
  BOOST_CHECK_EQUAL(max_pre_auth_bytes, 68u);
}

BOOST_AUTO_TEST_CASE(records_open_in_order_and_fail_when_altered) {
  const auto o = shake(token, token);
  record_sealer seal(o.client_keys.client_to_server);
  record_opener open(o.server_keys.client_to_server);
  const std::vector<uint8_t> a{'a', 'b', 'c'}, b{'d'};
  const auto ra = seal.seal(a), rb = seal.seal(b);
  BOOST_REQUIRE_EQUAL(ra.size(), record_header_bytes + 3 + record_tag_bytes);
  const auto header = [](const bytes& r) {
    return std::span<const uint8_t, record_header_bytes>(r.data(), record_header_bytes);
  };
  const auto body = [](const bytes& r) {
    return std::span<const uint8_t>(r.data() + record_header_bytes, r.size() - record_header_bytes);
  };
  // Out of order: b cannot open as the first record.
  BOOST_CHECK(!record_opener(o.server_keys.client_to_server).open(header(rb), body(rb)));
  auto altered = ra;
  altered[record_header_bytes] ^= 1;
  BOOST_CHECK(!record_opener(o.server_keys.client_to_server).open(header(altered), body(altered)));
  // The other direction's key opens nothing.
  BOOST_CHECK(!record_opener(o.server_keys.server_to_client).open(header(ra), body(ra)));
  BOOST_CHECK(open.open(header(ra), body(ra)) == a);
  BOOST_CHECK(open.open(header(rb), body(rb)) == b);
  // A replayed record fails.
  BOOST_CHECK(!open.open(header(ra), body(ra)));
}

BOOST_AUTO_TEST_CASE(a_record_header_claiming_too_much_is_refused_before_reading_it) {
  const std::array<uint8_t, 4> huge{0xff, 0xff, 0xff, 0xff}, max{0, 0, 0x40, 0};
  BOOST_CHECK(!record_opener::body_bytes(huge));
  BOOST_CHECK_EQUAL(*record_opener::body_bytes(max), max_record_plain + record_tag_bytes);
  record_sealer seal(key{});
  BOOST_CHECK_THROW(seal.seal(std::vector<uint8_t>(max_record_plain + 1)), std::logic_error);
}

BOOST_AUTO_TEST_SUITE_END()
