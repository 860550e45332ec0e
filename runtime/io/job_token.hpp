#pragma once

#include <filesystem>
#include <optional>
#include <string>

/// The job's token: the secret every node (and every helper that talks to a node, such as
/// the inspector or `deepcee inject`) must hold. It lives in a file or the environment and
/// is never printed or logged; errors name the file, never its content.
namespace deepcee::runtime {

/// Reads the token from `file` (at most 4 KiB, a regular file that only its owner may
/// access; surrounding white space dropped). A token of less than 128 bits of estimated
/// entropy (runtime/base/secrets.hpp), or one with white space inside, is an input_error
/// naming the file and how to make a good one.
std::string read_job_token(const std::filesystem::path& file);

/// The token's settings in the process's environment, which main reads once (tools/) and
/// passes down: nothing here reads the environment itself.
struct token_environment {
  std::optional<std::filesystem::path> token_file; ///< DEEPCEE_TOKEN_FILE, unless unset or empty
  std::optional<std::string> token;                ///< DEEPCEE_TOKEN, unless unset or empty
};

/// Where the token comes from, first that is set: `flag` (--token-file), `job_file_key`
/// (a job file's [security] token_file), the environment's DEEPCEE_TOKEN_FILE, then
/// DEEPCEE_TOKEN (the token itself, for scripts). Nothing when none is set. The default
/// `environment` is an empty one (no variable set).
std::optional<std::string> find_job_token(const std::optional<std::filesystem::path>& flag,
                                          const std::optional<std::filesystem::path>& job_file_key,
                                          const token_environment& environment = {});

/// Checks a token taken from the environment as read_job_token checks a file's; `origin`
/// names where it came from in the error.
std::string checked_token(std::string token, const std::string& origin);

} // namespace deepcee::runtime
