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
  // HKDF-SHA256 of the token "key", as `openssl kdf -keylen 32 -kdfopt digest:SHA256
  // -kdfopt key:key -kdfopt salt:"deepcee job token v1" -kdfopt info:"watch credential" HKDF`
  // computes it.
  BOOST_TEST(watch_credential("key") ==
             "dcw1-e1e926f6337d091e9d52b6c8fc29b418002e6325b7c2b6ec066cda0563e3c939");
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
