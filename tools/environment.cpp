#include "tools/environment.hpp"

#include <cstdlib>
#include <optional>
#include <string>

namespace deepcee::tools {

namespace {

/// The variable's value; an empty one counts as unset, as it always has for the token.
std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    return std::nullopt;
  return std::string(value);
}

} // namespace

process_environment read_process_environment() {
  process_environment env;
  if (auto file = variable("DEEPCEE_TOKEN_FILE"))
    env.token.token_file = std::filesystem::path(*file);
  env.token.token = variable("DEEPCEE_TOKEN");
  env.path = variable("PATH").value_or("/usr/sbin:/usr/bin:/sbin:/bin");
  return env;
}

} // namespace deepcee::tools
