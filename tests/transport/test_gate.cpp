#include "tests/transport/socket_test_util.hpp"
#include "transport/gate.hpp"

#include <boost/test/unit_test.hpp>

#include <thread>
#include <vector>

using namespace deepcee::transport;
using namespace deepcee::test;
using namespace std::chrono_literals;

namespace {

const std::string token = "0123456789abcdef0123456789abcdef";

} // namespace

BOOST_AUTO_TEST_SUITE(gate_sockets)

BOOST_AUTO_TEST_CASE(a_tunnel_with_the_token_reaches_the_inside_port_both_ways) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate g({token, 2000ms, 16, log.sink()}, outside, inside.port);
  tunnel t({token, 2000ms, 16, log.sink()}, "n0", outside);
  const int c = connect_local(t.local_port());
  std::string big(100000, 'x'); // spans several records
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>('a' + i % 26);
  BOOST_REQUIRE_EQUAL(::send(c, big.data(), big.size(), MSG_NOSIGNAL), ssize_t(big.size()));
  BOOST_CHECK(receive(c, big.size()) == big);
  ::close(c);
  BOOST_CHECK_EQUAL(t.refusal(), "");
  BOOST_CHECK_EQUAL(g.refused(), 0u);
  BOOST_CHECK_EQUAL(log.all(), "");
}

BOOST_AUTO_TEST_CASE(a_wrong_token_or_raw_bytes_never_reach_the_inside_port) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate g({token, 300ms, 16, log.sink()}, outside, inside.port);
  tunnel t({"ffffffffffffffffffffffffffffffff", 300ms, 16, {}}, "n0", outside);
  const int c = connect_local(t.local_port());
  ::send(c, "hello", 5, MSG_NOSIGNAL);
  BOOST_CHECK_EQUAL(receive(c, 5), ""); // closed, nothing echoed
  ::close(c);
  BOOST_CHECK_EQUAL(t.refusal(), "cannot authenticate node n0 at " + outside.text() +
                                     ": it does not hold the job's token");
  // A CAF header claiming 4 GiB, then silence: refused at the handshake's time limit.
  const int raw = connect_local(outside.port);
  std::vector<uint8_t> header(32, 0);
  header[8] = header[9] = header[10] = header[11] = 0xff;
  ::send(raw, header.data(), header.size(), MSG_NOSIGNAL);
  BOOST_CHECK_EQUAL(receive(raw, 1), "");
  ::close(raw);
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_GE(g.refused(), 2u);
  BOOST_CHECK_MESSAGE(log.all().find("refused a connection from 127.0.0.1:") == 0, log.all());
  BOOST_CHECK(log.all().find(token) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(connections_beyond_the_handshake_cap_are_closed_at_once) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate g({token, 1000ms, 2, log.sink()}, outside, inside.port);
  std::vector<int> idle{connect_local(outside.port), connect_local(outside.port)};
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  const int third = connect_local(outside.port);
  BOOST_CHECK_EQUAL(receive(third, 1), "");
  BOOST_CHECK(std::chrono::steady_clock::now() - start < 500ms); // not at the 1 s limit
  BOOST_CHECK(log.all().find("2 connections are in the handshake already") != std::string::npos);
  for (int fd : idle)
    ::close(fd);
  ::close(third);
}

BOOST_AUTO_TEST_SUITE_END()
