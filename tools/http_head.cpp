#include "tools/http_head.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace deepcee::tools {

namespace {

/// A line's length without its line end (LF, or CR LF).
size_t content_length(std::string_view line_with_lf) {
  size_t n = line_with_lf.size() - 1;
  if (n > 0 && line_with_lf[n - 1] == '\r')
    --n;
  return n;
}

} // namespace

http_head_scan scan_http_head(std::string_view received, const http_head_limits& limits) {
  using enum http_head_verdict;
  size_t start = 0;
  size_t lines = 0; // complete lines so far, the request line included
  while (true) {
    const auto lf = received.find('\n', start);
    const bool first = lines == 0;
    if (lf == std::string_view::npos) {
      // An unfinished line: its bytes so far already count against the bounds.
      if (first && received.size() > limits.request_line + 1)
        return {line_too_long, 0};
      return {received.size() > limits.bytes ? too_large : incomplete, 0};
    }
    const auto line = received.substr(start, lf + 1 - start);
    if (lf + 1 > limits.bytes)
      return {too_large, 0};
    if (first && content_length(line) > limits.request_line)
      return {line_too_long, 0};
    if (!first && content_length(line) == 0)
      return {complete, lf + 1};
    if (!first && lines > limits.header_lines)
      return {too_many_headers, 0};
    ++lines;
    start = lf + 1;
  }
}

std::string_view http_head_refusal(http_head_verdict v) {
  switch (v) {
  case http_head_verdict::line_too_long:
    return "414 URI Too Long";
  case http_head_verdict::too_many_headers:
  case http_head_verdict::too_large:
    return "431 Request Header Fields Too Large";
  default:
    return "";
  }
}

bool host_header_allowed(std::string_view host, const std::set<std::string>& names) {
  std::string name;
  if (host.starts_with('[')) { // [v6] or [v6]:port
    const auto close = host.find(']');
    if (close == std::string_view::npos || (close + 1 < host.size() && host[close + 1] != ':'))
      return false;
    name = host.substr(1, close - 1);
    in6_addr v6{};
    return ::inet_pton(AF_INET6, name.c_str(), &v6) == 1;
  }
  name = host.substr(0, host.find(':'));
  in_addr v4{};
  if (::inet_pton(AF_INET, name.c_str(), &v4) == 1)
    return true;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return !name.empty() && names.count(name) > 0;
}

} // namespace deepcee::tools
