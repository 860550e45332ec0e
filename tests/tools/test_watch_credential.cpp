// The watch credential: derived one way from the job's token, told apart from it, and what
// `deepcee inspect` sends whichever of the two it is given.
#include "tools/watch_credential.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::tools;

BOOST_AUTO_TEST_SUITE(watch_credential_tests)

BOOST_AUTO_TEST_CASE(derived_from_the_token_and_nothing_else) {
  const std::string token(64, 'a');
  const auto c = watch_credential(token);
  BOOST_TEST(c.size() == watch_prefix.size() + 64);
  BOOST_TEST(c.starts_with(watch_prefix));
  BOOST_TEST(c == watch_credential(token));                // the same token, the same credential
  BOOST_TEST(c != watch_credential(std::string(64, 'b'))); // another job's differs
  BOOST_TEST(c.find(token) == std::string::npos);
  // HMAC-SHA256(key "key", "deepcee watch credential v1"), as `openssl dgst -sha256 -hmac key`
  // computes it.
  BOOST_TEST(watch_credential("key") ==
             "dcw1-abc01454a07de6e35cb089f5e7534e8e6323ad1b0bd214fc2a05dab9339653a5");
}

BOOST_AUTO_TEST_CASE(inspect_sends_the_credential_never_the_token) {
  const std::string token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  BOOST_TEST(credential_to_send(token) == watch_credential(token));
  const auto c = watch_credential(token);
  BOOST_TEST(credential_to_send(c) == c); // a credential is sent as it is
  BOOST_TEST(credential_to_send("").empty());
}

BOOST_AUTO_TEST_CASE(random_credentials_differ) {
  const auto a = random_watch_credential(), b = random_watch_credential();
  BOOST_TEST(a.starts_with(watch_prefix));
  BOOST_TEST(a.size() == b.size());
  BOOST_TEST(a != b);
}

BOOST_AUTO_TEST_SUITE_END()
