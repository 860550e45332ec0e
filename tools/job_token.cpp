#include "tools/job_token.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"

#include <cstdlib>

namespace deepcee::tools {

std::string job_token_from_env() {
  const char* token = std::getenv("DEEPCEE_TOKEN");
  return token ? std::string(token) : std::string();
}

std::string read_job_token(const std::optional<std::string>& file) {
  if (!file)
    return job_token_from_env();
  auto text = runtime::read_bounded_file(*file, 4096, "token file");
  text = text.substr(0, text.find_first_of("\r\n"));
  if (text.empty())
    runtime::fail_input(*file, 1, "the token file's first line is empty");
  return text;
}

} // namespace deepcee::tools
