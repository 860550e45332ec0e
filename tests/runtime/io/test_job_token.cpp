#include "runtime/base/errors.hpp"
#include "runtime/io/job_token.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>

using deepcee::runtime::input_error;
using deepcee::test::temp_dir;

namespace {

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
  const auto file = dir.path / "token";
  std::ofstream(file) << "  0123456789abcdef0123456789abcdef0123\n";
  BOOST_CHECK_EQUAL(deepcee::runtime::read_job_token(file), "0123456789abcdef0123456789abcdef0123");
  BOOST_CHECK_EQUAL(*deepcee::runtime::find_job_token(file, std::nullopt),
                    "0123456789abcdef0123456789abcdef0123");
}

BOOST_AUTO_TEST_CASE(a_short_token_or_no_file_is_refused_naming_the_file_not_the_token) {
  temp_dir dir;
  const auto file = dir.path / "short";
  std::ofstream(file) << "secret123\n";
  const auto e = error_of(file);
  BOOST_CHECK_MESSAGE(e.find(file.string() + ": the job token has 9 characters, at least 32") == 0,
                      e);
  BOOST_CHECK(e.find("secret123") == std::string::npos);
  const auto spaced = dir.path / "spaced";
  std::ofstream(spaced) << "0123456789abcdef 0123456789abcdef\n";
  BOOST_CHECK(error_of(spaced).find("white space") != std::string::npos);
  BOOST_CHECK(error_of(dir.path / "absent").find((dir.path / "absent").string()) == 0);
  BOOST_CHECK(error_of("/dev/zero").find("/dev/zero") == 0); // bounded: no endless read
}

BOOST_AUTO_TEST_SUITE_END()
