#pragma once

#include <stdexcept>
#include <string>

namespace deepcee::test {

/// The message of the `Error` (std::invalid_argument unless said) that f throws ("" when
/// it throws none).
template <class Error = std::invalid_argument, class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace deepcee::test
