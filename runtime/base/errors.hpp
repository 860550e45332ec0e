#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace deepcee::runtime {

/// Bad input from the user: a config, corpus, checkpoint, cluster or plan that cannot be
/// used. The message is one line that names the file (and the line, where there is
/// one); the command line prints it and exits with code 2.
class input_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// "FILE: what" or "FILE:LINE: what" (line 0 means no line).
std::string located(const std::filesystem::path& file, int64_t line, const std::string& what);

[[noreturn]] inline void fail_input(const std::filesystem::path& file, int64_t line,
                                    const std::string& what) {
  throw input_error(located(file, line, what));
}

} // namespace deepcee::runtime
