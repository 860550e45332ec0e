#include "runtime/base/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace deepcee::runtime {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

/// Splits "12.5 Gbps" into 12.5 and "Gbps"; nullopt when there is no number first.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  text = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value))
    return std::nullopt;
  std::string_view unit = trim(std::string_view(end, text.data() + text.size() - end));
  return std::pair{value, unit};
}

/// Decimal (k, M, G, T) or binary (Ki, Mi, Gi, Ti) prefix at the start of `unit`; the
/// prefix is removed. No prefix gives 1.
double take_prefix(std::string_view& unit) {
  static constexpr struct {
    std::string_view text;
    double factor;
  } prefixes[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                  {"k", 1e3},     {"K", 1e3},        {"M", 1e6},           {"G", 1e9},
                  {"T", 1e12}};
  for (const auto& p : prefixes)
    if (unit.size() > p.text.size() && unit.substr(0, p.text.size()) == p.text) {
      unit.remove_prefix(p.text.size());
      return p.factor;
    }
  return 1.0;
}

std::string format_scaled(double value, const char* const* units, int count, double step) {
  int i = 0;
  while (i + 1 < count && std::fabs(value) >= step) {
    value /= step;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", value, units[i]);
  return buf;
}

} // namespace

std::optional<double> parse_bandwidth(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->second.empty())
    return std::nullopt;
  auto [value, unit] = *split;
  double factor = take_prefix(unit);
  if (unit == "bps" || unit == "bit/s")
    return value * factor / 8.0;
  if (unit == "B/s" || unit == "Bps")
    return value * factor;
  return std::nullopt;
}

std::optional<double> parse_duration(std::string_view text) {
  auto split = split_number(text);
  if (!split)
    return std::nullopt;
  auto [value, unit] = *split;
  if (unit == "s")
    return value;
  if (unit == "ms")
    return value / 1e3;
  if (unit == "us" || unit == "µs")
    return value / 1e6;
  if (unit == "ns")
    return value / 1e9;
  return std::nullopt;
}

std::optional<double> parse_bytes(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->second.empty())
    return std::nullopt;
  auto [value, unit] = *split;
  double factor = take_prefix(unit);
  if (unit == "B")
    return value * factor;
  return std::nullopt;
}

std::optional<double> parse_flops(std::string_view text) {
  auto split = split_number(text);
  if (!split || split->second.empty())
    return std::nullopt;
  auto [value, unit] = *split;
  double factor = take_prefix(unit);
  if (unit == "FLOPS" || unit == "FLOP/s" || unit == "flops")
    return value * factor;
  return std::nullopt;
}

std::string format_bandwidth(double bytes_per_s) {
  // Network speeds read best in bits, memory and bus speeds in bytes.
  if (bytes_per_s < 1e9 / 8 * 100) {
    static const char* const units[] = {"bps", "Kbps", "Mbps", "Gbps"};
    return format_scaled(bytes_per_s * 8, units, 4, 1000);
  }
  static const char* const units[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  return format_scaled(bytes_per_s, units, 5, 1000);
}

std::string format_duration(double seconds) {
  char buf[64];
  if (std::fabs(seconds) >= 1)
    std::snprintf(buf, sizeof buf, "%.4g s", seconds);
  else if (std::fabs(seconds) >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.4g us", seconds * 1e6);
  return buf;
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KB", "MB", "GB", "TB"};
  return format_scaled(bytes, units, 5, 1000);
}

} // namespace deepcee::runtime
