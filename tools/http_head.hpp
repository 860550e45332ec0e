#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

/// The bounds an HTTP request's head must keep before any of it is parsed: what the
/// inspection endpoint's acceptor (bounded_http.hpp) checks on the bytes as they arrive, so
/// a request line or a header block without end costs at most `bytes` of memory. Pure.
namespace deepcee::tools {

struct http_head_limits {
  size_t request_line = 4096; ///< bytes of the first line, its line end aside
  size_t header_lines = 64;   ///< header lines after it
  size_t bytes = 16384;       ///< the whole head, its empty last line included
};

enum class http_head_verdict {
  incomplete,       ///< within the bounds so far: read on
  complete,         ///< an empty line ended it within the bounds
  line_too_long,    ///< the request line passed its bound (414)
  too_many_headers, ///< more header lines than the bound (431)
  too_large,        ///< the head passed its byte bound (431)
};

struct http_head_scan {
  http_head_verdict verdict = http_head_verdict::incomplete;
  size_t length = 0; ///< complete: the head's bytes, its empty last line included
};

/// Scans what has arrived of a request. Lines end in LF (a CR before it is part of the line
/// end); the head ends at the first empty line. Bytes after the head are not looked at.
http_head_scan scan_http_head(std::string_view received, const http_head_limits& limits);

/// The status line and reason a refused head gets ("414 URI Too Long"), "" for the others.
std::string_view http_head_refusal(http_head_verdict v);

/// Whether a request whose Host header says `host` ("name", "name:port", "[v6]:port") is
/// meant for this endpoint: `host` names an IP address, or one of `names` (lowercase), in
/// any case. A page of another site that a name now resolving to this endpoint serves (DNS
/// rebinding) sends that site's name; an address is no name an attacker can point here.
bool host_header_allowed(std::string_view host, const std::set<std::string>& names);

} // namespace deepcee::tools
