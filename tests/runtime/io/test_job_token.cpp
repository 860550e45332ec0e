#include "runtime/base/errors.hpp"
#include "runtime/base/secrets.hpp"
#include "runtime/io/job_token.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <vector>

using deepcee::runtime::input_error;
using deepcee::test::temp_dir;
namespace fs = std::filesystem;

namespace {

/// What `openssl rand -hex 32` makes.
const std::string good = "3f9c1a7be04d52c86a1e9f0b7d23c4e5a8b61f0d9e2c7a43b5d81e6f0c9a2b74";

/// Writes `text` to `file`, readable by its owner alone unless `mode` says otherwise.
fs::path write(const fs::path& file, const std::string& text,
               fs::perms mode = fs::perms::owner_read | fs::perms::owner_write) {
  std::ofstream(file) << text;
  fs::permissions(file, mode);
  return file;
}

/// The error's text, which must name the file and never hold the token.
std::string error_of(const std::filesystem::path& file) {
  try {
    deepcee::runtime::read_job_token(file);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(job_token)

BOOST_AUTO_TEST_CASE(a_token_file_is_read_trimmed) {
  temp_dir dir;
  const auto file = write(dir.path / "token", "  " + good + "\n");
  BOOST_CHECK_EQUAL(deepcee::runtime::read_job_token(file), good);
  BOOST_CHECK_EQUAL(*deepcee::runtime::find_job_token(file, std::nullopt), good);
}

BOOST_AUTO_TEST_CASE(a_short_token_or_no_file_is_refused_naming_the_file_not_the_token) {
  temp_dir dir;
  const auto file = write(dir.path / "short", "secret123\n");
  const auto e = error_of(file);
  BOOST_CHECK_MESSAGE(e.find(file.string() + ": the job token is too weak: about ") == 0 &&
                          e.find("at least 128 are needed (make one with `(umask 077; openssl "
                                 "rand -hex 32 > FILE)`)") != std::string::npos,
                      e);
  BOOST_CHECK(e.find("secret123") == std::string::npos);
  const auto spaced = write(dir.path / "spaced", good.substr(0, 32) + " " + good.substr(32));
  BOOST_CHECK(error_of(spaced).find("white space") != std::string::npos);
  BOOST_CHECK(error_of(dir.path / "absent").find((dir.path / "absent").string()) == 0);
  BOOST_CHECK(error_of("/dev/zero").find("/dev/zero") == 0); // bounded: no endless read
}

BOOST_AUTO_TEST_CASE(tokens_below_128_bits_of_estimated_entropy_are_refused) {
  using deepcee::runtime::estimated_secret_bits;
  BOOST_CHECK_CLOSE(estimated_secret_bits(good), 256.0, 5.0);       // a 6-run repeat at most
  BOOST_CHECK_GE(estimated_secret_bits(good.substr(0, 32)), 128.0); // openssl rand -hex 16
  BOOST_CHECK_GE(estimated_secret_bits("q3N+v8Zr0tK1bX9yWm4LcA=="), 128.0); // rand -base64 16
  // A word repeated, a short cycle, one letter, a counted sequence twice, a pass phrase.
  for (const std::string weak : std::vector<std::string>{
           "passwordpasswordpasswordpassword", "abcabcabcabcabcabcabcabcabcabcabcabcabc",
           std::string(64, 'a'), "0123456789abcdef0123456789abcdef0123",
           "Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3", "correcthorsebattery"}) {
    BOOST_CHECK_MESSAGE(estimated_secret_bits(weak) < 128.0, weak);
    temp_dir dir;
    BOOST_CHECK_MESSAGE(error_of(write(dir.path / "t", weak)).find("too weak") != std::string::npos,
                        weak);
  }
  BOOST_CHECK_EQUAL(estimated_secret_bits(""), 0.0);
  BOOST_CHECK_THROW(
      deepcee::runtime::checked_token("passwordpasswordpasswordpassword", "DEEPCEE_TOKEN"),
      input_error);
}

BOOST_AUTO_TEST_CASE(a_token_file_that_group_or_others_may_read_is_refused_as_ssh_would) {
  temp_dir dir;
  const auto file = write(dir.path / "token", good,
                          fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const auto e = error_of(file);
  BOOST_CHECK_MESSAGE(e == file.string() +
                               ": the token file may be read by group or others "
                               "(mode 0640); a secret must be private, as ssh "
                               "wants its keys: chmod 600 " +
                               file.string(),
                      e);
  fs::permissions(file, fs::perms::owner_read | fs::perms::others_read);
  BOOST_CHECK(error_of(file).find("(mode 0404)") != std::string::npos);
  fs::permissions(file, fs::perms::owner_read);
  BOOST_CHECK_EQUAL(error_of(file), "");
}

BOOST_AUTO_TEST_SUITE_END()
