#pragma once

#include <stdexcept>
#include <string>

namespace deepcee::test {

/// The message of the std::invalid_argument that f throws ("" when it throws none).
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace deepcee::test
