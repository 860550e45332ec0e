// The bounds of a request's head, checked on the bytes as they arrive: a head within them
// completes, one past any of them is refused as soon as the bytes show it.
#include "tools/http_head.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

using namespace deepcee::tools;
using enum http_head_verdict;

BOOST_AUTO_TEST_SUITE(http_head_tests)

namespace {
const http_head_limits limits{.request_line = 32, .header_lines = 3, .bytes = 128};
}

BOOST_AUTO_TEST_CASE(a_head_within_the_bounds_completes_at_its_empty_line) {
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\n\r\n";
  const auto scan = scan_http_head(head + "more", limits);
  BOOST_TEST((scan.verdict == complete));
  BOOST_TEST(scan.length == head.size()); // what follows the head is not part of it
  // Bare LFs end lines too.
  BOOST_TEST((scan_http_head("GET / HTTP/1.1\n\n", limits).verdict == complete));
  // Every prefix of it is incomplete, not refused.
  for (size_t n = 0; n < head.size(); ++n)
    BOOST_TEST((scan_http_head(head.substr(0, n), limits).verdict == incomplete), n);
}

BOOST_AUTO_TEST_CASE(a_request_line_past_its_bound_is_refused_before_it_ends) {
  const std::string line = "GET /" + std::string(27, 'a'); // 32 bytes: at the bound
  BOOST_TEST((scan_http_head(line + "\r\n\r\n", limits).verdict == complete));
  BOOST_TEST((scan_http_head(line + "a\r\n\r\n", limits).verdict == line_too_long));
  BOOST_TEST((scan_http_head(line + "ab", limits).verdict == line_too_long)); // unfinished
  BOOST_TEST((scan_http_head(line + "\r", limits).verdict == incomplete));
  BOOST_TEST(http_head_refusal(line_too_long) == "414 URI Too Long");
}

BOOST_AUTO_TEST_CASE(header_lines_past_their_count_or_bytes_are_refused) {
  const std::string first = "GET / HTTP/1.1\r\n";
  BOOST_TEST((scan_http_head(first + "A: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits).verdict == complete));
  BOOST_TEST((scan_http_head(first + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n", limits).verdict ==
              too_many_headers));
  const std::string big = first + "A: " + std::string(200, 'x');
  BOOST_TEST((scan_http_head(big, limits).verdict == too_large)); // no line end yet
  BOOST_TEST((scan_http_head(first + "A: " + std::string(110, 'x') + "\r\n\r\n", limits).verdict ==
              too_large)); // ends past the bound
  BOOST_TEST(http_head_refusal(too_large) == "431 Request Header Fields Too Large");
  BOOST_TEST(http_head_refusal(complete).empty());
}

BOOST_AUTO_TEST_CASE(a_host_header_must_name_an_address_or_one_of_the_endpoints_names) {
  const std::set<std::string> names{"gpu-box", "localhost"};
  // What browsers send for the endpoint's own names and addresses.
  for (const auto* host : {"gpu-box", "GPU-Box:9400", "localhost:9400", "10.0.0.7:9400",
                           "127.0.0.1", "[::1]:9400", "[fe80::1]"})
    BOOST_TEST(host_header_allowed(host, names), host);
  // A rebinding attacker's page sends its own name; garbage is no address either.
  for (const auto* host : {"evil.example:9400", "gpu-box.evil.example", "", ":9400", "[gpu-box]",
                           "[::1", "[::1]evil.example", "10.0.0", "10.0.0.7.evil.example"})
    BOOST_TEST(!host_header_allowed(host, names), host);
}

BOOST_AUTO_TEST_SUITE_END()
