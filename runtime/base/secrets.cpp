#include "runtime/base/secrets.hpp"

#include "runtime/base/errors.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace deepcee::runtime {

namespace {

constexpr size_t min_repeat = 6;

double alphabet_of(std::string_view s) {
  const auto all = [&](auto in) { return std::all_of(s.begin(), s.end(), in); };
  const auto any = [&](auto in) { return std::any_of(s.begin(), s.end(), in); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto base64 = [](char c) {
    return std::string_view("+/=_-").find(c) != std::string_view::npos;
  };
  const auto other = [&](char c) { return !digit(c) && !lower(c) && !upper(c) && !base64(c); };
  if (all(digit))
    return 10;
  if (all([&](char c) { return digit(c) || (c >= 'a' && c <= 'f'); }) ||
      all([&](char c) { return digit(c) || (c >= 'A' && c <= 'F'); }))
    return 16;
  return (any(lower) ? 26 : 0) + (any(upper) ? 26 : 0) + (any(digit) ? 10 : 0) +
         (any(base64) ? 5 : 0) + (any(other) ? 33 : 0);
}

/// The longest run at `i` that repeats one starting earlier (it may overlap `i`).
size_t longest_repeat(std::string_view s, size_t i) {
  size_t best = 0;
  for (size_t j = 0; j < i; ++j) {
    size_t k = 0;
    while (i + k < s.size() && s[j + k] == s[i + k])
      ++k;
    best = std::max(best, k);
  }
  return best;
}

} // namespace

double estimated_secret_bits(std::string_view secret) {
  if (secret.empty())
    return 0;
  size_t novel = 0;
  for (size_t i = 0; i < secret.size();) {
    const size_t repeat = longest_repeat(secret, i);
    if (repeat >= min_repeat) {
      i += repeat;
    } else {
      ++novel;
      ++i;
    }
  }
  return static_cast<double>(novel) * std::log2(alphabet_of(secret));
}

void require_private_file(const std::filesystem::path& file, const std::string& what) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || (st.st_mode & 077) == 0)
    return; // a missing file is the reader's error to name
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  fail_input(file, 0,
             "the " + what + " may be read by group or others (mode " + mode +
                 "); a secret must be private, as ssh wants its keys: chmod 600 " + file.string());
}

} // namespace deepcee::runtime
