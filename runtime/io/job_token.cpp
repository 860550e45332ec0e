#include "runtime/io/job_token.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace deepcee::runtime {

namespace {

constexpr uint64_t max_token_file_bytes = 4096;
constexpr const char* how_to_make = "make one with `(umask 077; openssl rand -hex 32 > FILE)`";

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

std::string trimmed(std::string s) {
  const auto first = std::find_if_not(s.begin(), s.end(), is_space);
  const auto last = std::find_if_not(s.rbegin(), s.rend(), is_space).base();
  return first < last ? std::string(first, last) : std::string();
}

/// The error for a bad token, `origin` named; never the token's text.
std::string problem(const std::string& token) {
  if (std::any_of(token.begin(), token.end(), is_space))
    return std::string("the job token holds white space (") + how_to_make + ")";
  if (const double bits = estimated_secret_bits(token); bits < min_secret_bits)
    return "the job token is too weak: about " + std::to_string(std::lround(bits)) +
           " bits of entropy, at least " + std::to_string(std::lround(min_secret_bits)) +
           " are needed (" + how_to_make + ")";
  return {};
}

} // namespace

std::string checked_token(std::string token, const std::string& origin) {
  token = trimmed(std::move(token));
  if (const auto why = problem(token); !why.empty())
    throw input_error(origin + ": " + why);
  return token;
}

std::string read_job_token(const std::filesystem::path& file) {
  require_private_file(file, "token file");
  auto token = trimmed(read_bounded_file(file, max_token_file_bytes, "token file"));
  if (const auto why = problem(token); !why.empty())
    fail_input(file, 0, why);
  return token;
}

std::optional<std::string> find_job_token(const std::optional<std::filesystem::path>& flag,
                                          const std::optional<std::filesystem::path>& job_file_key,
                                          const token_environment& environment) {
  if (flag)
    return read_job_token(*flag);
  if (job_file_key)
    return read_job_token(*job_file_key);
  if (environment.token_file)
    return read_job_token(*environment.token_file);
  if (environment.token)
    return checked_token(*environment.token, "DEEPCEE_TOKEN");
  return std::nullopt;
}

} // namespace deepcee::runtime
