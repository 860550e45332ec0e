#include "runtime/io/job_token.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"

#include <algorithm>
#include <cctype>

namespace deepcee::runtime {

namespace {

constexpr uint64_t max_token_file_bytes = 4096;
/// 32 hex characters are 128 bits.
constexpr size_t min_token_chars = 32;

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
  if (token.size() < min_token_chars)
    return "the job token has " + std::to_string(token.size()) + " characters, at least " +
           std::to_string(min_token_chars) + " are needed (make one with `openssl rand -hex 32`)";
  if (std::any_of(token.begin(), token.end(), is_space))
    return "the job token holds white space (make one with `openssl rand -hex 32`)";
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
