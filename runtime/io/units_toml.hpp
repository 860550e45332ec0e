#pragma once

#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace deepcee::runtime::toml_input {

/// Small helpers shared by the cluster and profile readers: every failure names the
/// file and the line of the offending TOML node, so a user can jump straight to it.

inline int64_t line_of(const toml::node& n) {
  return static_cast<int64_t>(n.source().begin.line);
}

[[noreturn]] inline void fail_at(const std::filesystem::path& file, const toml::node& n,
                                 const std::string& what) {
  fail_input(file, line_of(n), what);
}

/// Rejects keys outside `allowed`: a typo in a config must not be silently ignored.
inline void check_keys(const std::filesystem::path& file, const toml::table& t,
                       std::initializer_list<std::string_view> allowed, std::string_view where) {
  for (const auto& [key, value] : t) {
    bool known = false;
    for (auto a : allowed)
      known = known || key.str() == a;
    if (known)
      continue;
    std::string list;
    for (auto a : allowed)
      list += (list.empty() ? "" : ", ") + std::string(a);
    auto line = key.source().begin.line ? key.source().begin.line : value.source().begin.line;
    fail_input(file, static_cast<int64_t>(line),
               "unknown key '" + std::string(key.str()) + "' in " + std::string(where) +
                   " (expected one of: " + list + ")");
  }
}

inline const toml::table& as_table(const std::filesystem::path& file, const toml::node& n,
                                   const std::string& what) {
  if (!n.is_table())
    fail_at(file, n, what + " must be a table");
  return *n.as_table();
}

inline std::string get_string(const std::filesystem::path& file, const toml::node& n,
                              const std::string& what) {
  if (!n.is_string())
    fail_at(file, n, what + " must be a string");
  return n.as_string()->get();
}

inline int64_t get_integer(const std::filesystem::path& file, const toml::node& n,
                           const std::string& what) {
  if (!n.is_integer())
    fail_at(file, n, what + " must be an integer");
  return n.as_integer()->get();
}

inline double get_number(const std::filesystem::path& file, const toml::node& n,
                         const std::string& what) {
  if (n.is_integer())
    return static_cast<double>(n.as_integer()->get());
  if (n.is_floating_point())
    return n.as_floating_point()->get();
  fail_at(file, n, what + " must be a number");
}

/// A quantity written either as a string with a unit (parsed by `parse`) or as a bare
/// number in `bare_unit` (its value in SI units, e.g. 1e9 / 8 for "Gbps").
template <class Parse>
double get_quantity(const std::filesystem::path& file, const toml::node& n, const std::string& what,
                    Parse parse, double bare_unit, std::string_view example) {
  if (n.is_string()) {
    auto v = parse(n.as_string()->get());
    if (!v)
      fail_at(file, n,
              what + " '" + n.as_string()->get() + "' is not understood (e.g. " +
                  std::string(example) + ")");
    return *v;
  }
  if (n.is_integer() || n.is_floating_point())
    return get_number(file, n, what) * bare_unit;
  fail_at(file, n,
          what + " must be a string with a unit (e.g. " + std::string(example) + ") or a number");
}

/// Parses TOML text; a syntax error becomes "FILE:LINE: what".
inline toml::table parse_text(std::string_view text, const std::filesystem::path& source) {
  try {
    return toml::parse(text, source.string());
  } catch (const toml::parse_error& e) {
    fail_input(source, static_cast<int64_t>(e.source().begin.line), std::string(e.description()));
  }
}

} // namespace deepcee::runtime::toml_input
