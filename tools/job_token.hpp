#pragma once

#include <optional>
#include <string>

/// The job's token (the shared secret of the inspection endpoint and its clients). Never
/// printed or logged.
namespace deepcee::tools {

/// The token from the environment (DEEPCEE_TOKEN); empty when unset.
std::string job_token_from_env();

/// The token in `file` (its first line) when given, else job_token_from_env(). An unreadable
/// or empty file is an input_error naming it.
std::string read_job_token(const std::optional<std::string>& file);

} // namespace deepcee::tools
