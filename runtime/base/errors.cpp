#include "runtime/base/errors.hpp"

namespace deepcee::runtime {

std::string located(const std::filesystem::path& file, int64_t line, const std::string& what) {
  std::string where = file.string();
  if (line > 0)
    where += ":" + std::to_string(line);
  return where + ": " + what;
}

} // namespace deepcee::runtime
