#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace deepcee::messages {

/// Why a received message was refused: one line, for the log and the drop counter.
struct decode_error {
  std::string what;
};

/// A decoded value or the reason there is none. C++20 has no std::expected, and
/// `caf::expected` would make this layer (and its tests) depend on CAF's error
/// categories; an actor turns a failed `result` into a `caf::error` at its boundary
/// (error_code::malformed_message with the text, actors/errors.hpp), so nothing is lost.
template <class T>
class result {
public:
  result(T value) : state_(std::move(value)) {}
  result(decode_error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  /// Access to the value of a failed result is a bug, so it throws.
  T& value() & { return std::get<0>(checked()); }
  const T& value() const& { return std::get<0>(checked()); }
  T&& value() && { return std::get<0>(std::move(checked())); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const decode_error& error() const { return std::get<1>(state_); }

private:
  std::variant<T, decode_error>& checked() {
    if (!ok())
      throw std::logic_error("result: no value: " + error().what);
    return state_;
  }
  const std::variant<T, decode_error>& checked() const {
    if (!ok())
      throw std::logic_error("result: no value: " + error().what);
    return state_;
  }

  std::variant<T, decode_error> state_;
};

} // namespace deepcee::messages
