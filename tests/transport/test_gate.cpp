#include "tests/support/refusal.hpp"
#include "tests/transport/socket_test_util.hpp"
#include "transport/gate.hpp"
#include "transport/log_budget.hpp"
#include "transport/tls_stream.hpp"

#include <boost/test/unit_test.hpp>

#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace deepcee::transport;
using namespace deepcee::test;
using namespace std::chrono_literals;

namespace {

const std::string token = "3f9c1a7be04d52c86a1e9f0b7d23c4e5a8b61f0d9e2c7a43b5d81e6f0c9a2b74";
const std::string other_job = "9b2e71d04c8f3a65e1d7b09c2f4a8e36d5c1b7f0a9e43d2c6b8f1e05a7d3c942";

std::string pattern(size_t n) {
  std::string s(n, 'x');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return s;
}

/// Sends `text` through a local port and returns what the echo gives back.
std::string echo_through(uint16_t port, const std::string& text) {
  const int c = connect_local(port);
  ::send(c, text.data(), text.size(), MSG_NOSIGNAL);
  auto back = receive(c, text.size());
  ::close(c);
  return back;
}

/// The first flight of a PSK client of `tok`: its ClientHello, as a gate would read it.
std::string client_hello(const std::string& tok) {
  int sv[2];
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  tls_context ctx(tok);
  std::thread client([&] {
    tls_stream s(ctx, sv[0], false);
    s.handshake(tls_stream::clock::now() + 300ms, "n0", {});
  });
  const auto hello = receive(sv[1], 1 << 16);
  client.join();
  ::close(sv[0]);
  ::close(sv[1]);
  return hello;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gate_sockets)

BOOST_AUTO_TEST_CASE(a_tunnel_with_the_token_reaches_the_inside_port_both_ways) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate_settings s{token, 2000ms, 16, log.sink()};
  s.key_update_bytes = 4096; // many key updates on the way
  gate g(s, outside, inside.port);
  tunnel t(s, "n0", outside);
  const auto big = pattern(300000); // spans many records
  BOOST_CHECK(echo_through(t.local_port(), big) == big);
  BOOST_CHECK_EQUAL(t.refusal(), "");
  BOOST_CHECK_EQUAL(g.refused(), 0u);
  BOOST_CHECK_EQUAL(g.admitted(), 1u);
  BOOST_CHECK_EQUAL(log.all(), "");
}

BOOST_AUTO_TEST_CASE(a_wrong_token_or_raw_bytes_never_reach_the_inside_port) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate g({token, 300ms, 16, log.sink()}, outside, inside.port);
  // Another job's token: its PSK identity is not this job's.
  tunnel t({other_job, 300ms, 16, {}}, "n0", outside);
  BOOST_CHECK_EQUAL(echo_through(t.local_port(), "hello"), ""); // closed, nothing echoed
  BOOST_CHECK_EQUAL(t.refusal(), "cannot authenticate node n0 at " + outside.text() +
                                     ": it does not hold the job's token");
  for (int i = 0; i < 100 && g.refused() < 1; ++i)
    std::this_thread::sleep_for(10ms);
  BOOST_CHECK_MESSAGE(contains(log.all(), ": it does not hold the job's token (its PSK identity "
                                          "is another job's)"),
                      log.all());
  // A CAF header claiming 4 GiB, then silence: no TLS, refused at once.
  const int raw = connect_local(outside.port);
  std::vector<uint8_t> header(32, 0);
  header[8] = header[9] = header[10] = header[11] = 0xff;
  ::send(raw, header.data(), header.size(), MSG_NOSIGNAL);
  BOOST_CHECK_EQUAL(receive(raw, 1), "");
  ::close(raw);
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_EQUAL(g.refused(), 2u);
  BOOST_CHECK_MESSAGE(log.all().find("refused a connection from 127.0.0.1:") == 0, log.all());
  BOOST_CHECK_MESSAGE(contains(log.all(), "the TLS handshake failed"), log.all());
  BOOST_CHECK(log.all().find(token) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_psk_handshake_has_forward_secrecy_and_an_authenticated_close) {
  int tcp[2], plain_a[2], plain_b[2];
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, tcp) == 0);
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, plain_a) == 0);
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, plain_b) == 0);
  tls_context ctx(token);
  tls_stream server(ctx, tcp[0], true), client(ctx, tcp[1], false);
  const auto deadline = tls_stream::clock::now() + 2s;
  std::string server_refusal;
  std::thread s([&] { server_refusal = server.handshake(deadline, {}, {}); });
  BOOST_CHECK_EQUAL(client.handshake(deadline, "n0", {}), "");
  s.join();
  BOOST_CHECK_EQUAL(server_refusal, "");
  // An (EC)DHE key share in every handshake: recorded traffic stays sealed once the token
  // is known.
  BOOST_CHECK_MESSAGE(!client.key_exchange_group().empty(), "no (EC)DHE group");
  BOOST_CHECK_EQUAL(client.key_exchange_group(), server.key_exchange_group());
  BOOST_CHECK(!(SSL_CTX_get_options(ctx.native()) & SSL_OP_ALLOW_NO_DHE_KEX));
  // The client's side ends (CAF closed): its close_notify ends the server's splice cleanly,
  // after every byte, with the client's key updated along the way.
  tls_ending server_end = tls_ending::none, client_end = tls_ending::none;
  std::thread sa([&] { server_end = server.splice(plain_a[0], 1 << 30); });
  std::thread sb([&] { client_end = client.splice(plain_b[0], 1000); });
  const auto data = pattern(50000);
  BOOST_REQUIRE_EQUAL(::send(plain_b[1], data.data(), data.size(), MSG_NOSIGNAL),
                      ssize_t(data.size()));
  BOOST_CHECK(receive(plain_a[1], data.size()) == data);
  ::shutdown(plain_b[1], SHUT_RDWR);
  sb.join();
  sa.join();
  BOOST_CHECK(client_end == tls_ending::closed);
  BOOST_CHECK(server_end == tls_ending::closed);
  BOOST_CHECK_GE(client.key_updates(), 3u); // 16 KiB at most per write
  for (int fd : {tcp[0], tcp[1], plain_a[0], plain_a[1], plain_b[0], plain_b[1]})
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_stream_cut_without_close_notify_is_no_clean_end) {
  int tcp[2], plain[2];
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, tcp) == 0);
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, plain) == 0);
  tls_context ctx(token);
  tls_stream server(ctx, tcp[0], true), client(ctx, tcp[1], false);
  const auto deadline = tls_stream::clock::now() + 2s;
  std::thread s([&] { server.handshake(deadline, {}, {}); });
  const auto refusal = client.handshake(deadline, "n0", {});
  s.join();
  BOOST_REQUIRE_EQUAL(refusal, "");
  tls_ending end = tls_ending::none;
  std::thread sa([&] { end = server.splice(plain[0], 1 << 30); });
  ::shutdown(tcp[1], SHUT_RDWR); // the wire cut under the client: no close_notify
  sa.join();
  BOOST_CHECK(end == tls_ending::cut);
  for (int fd : {tcp[0], tcp[1], plain[0], plain[1]})
    ::close(fd);
}

/// How CAF's side of a connection through a gate ends when the client ends its TLS stream
/// with close_notify (`clean`) or cuts the socket under it: "end" or "reset".
std::string inside_end_when_client(bool clean) {
  std::string error;
  const int listener = listen_socket({"127.0.0.1", 0}, error);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  std::string seen;
  std::thread inside([&] {
    const int c = ::accept(listener, nullptr, nullptr);
    char buf[256];
    ssize_t n;
    while ((n = ::recv(c, buf, sizeof buf, 0)) > 0) {
    }
    seen = n == 0 ? "end" : (errno == ECONNRESET ? "reset" : std::strerror(errno));
    ::close(c);
  });
  const endpoint outside{"127.0.0.1", free_port()};
  gate g({token, 2000ms, 16, {}}, outside, ntohs(a.sin_port));
  tls_context ctx(token);
  const int fd = connect_local(outside.port);
  int plain[2];
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, plain) == 0);
  {
    tls_stream client(ctx, fd, false);
    BOOST_REQUIRE_EQUAL(client.handshake(tls_stream::clock::now() + 2s, "n0", {}), "");
    std::thread splice([&] { client.splice(plain[0], 1 << 30); });
    ::send(plain[1], "some bytes", 10, MSG_NOSIGNAL);
    std::this_thread::sleep_for(100ms);
    if (clean)
      ::shutdown(plain[1], SHUT_RDWR); // the client's CAF ends: close_notify
    else
      ::shutdown(fd, SHUT_RDWR); // the wire cut: no close_notify
    splice.join();
  }
  inside.join();
  for (int f : {fd, plain[0], plain[1], listener})
    ::close(f);
  return seen;
}

BOOST_AUTO_TEST_CASE(a_stream_cut_without_close_notify_resets_cafs_side) {
  BOOST_CHECK_EQUAL(inside_end_when_client(true), "end");
  BOOST_CHECK_EQUAL(inside_end_when_client(false), "reset");
}

BOOST_AUTO_TEST_CASE(a_stranger_who_sends_nothing_is_closed_at_the_first_bytes_deadline) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate_settings s{token, 5000ms, 16, log.sink()};
  s.first_bytes_timeout = 200ms;
  gate g(s, outside, inside.port);
  const int idle = connect_local(outside.port);
  BOOST_CHECK_EQUAL(receive(idle, 1), ""); // closed well within receive's second
  ::close(idle);
  std::this_thread::sleep_for(50ms);
  BOOST_CHECK_MESSAGE(contains(log.all(), ": it sent nothing within 0.2 s"), log.all());
}

BOOST_AUTO_TEST_CASE(past_the_cap_of_an_address_its_oldest_waiting_connection_is_closed) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate_settings s{token, 5000ms, 16, log.sink()};
  s.max_handshaking_per_address = 2;
  gate g(s, outside, inside.port);
  const int first = connect_local(outside.port), second = connect_local(outside.port);
  std::this_thread::sleep_for(100ms);
  const int third = connect_local(outside.port);
  BOOST_CHECK_EQUAL(receive(first, 1), ""); // closed at once, not at 3 s
  // The newcomer is served: a tunnel's connection still gets through.
  tunnel t({token, 2000ms, 16, {}}, "n0", outside);
  BOOST_CHECK_EQUAL(echo_through(t.local_port(), "through"), "through");
  BOOST_CHECK_MESSAGE(contains(log.all(), "closing the oldest connection from 127.0.0.1 still in "
                                          "the handshake: too many are"),
                      log.all());
  for (int fd : {first, second, third})
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(sixty_four_idle_strangers_do_not_lock_a_member_out) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate g({token, 5000ms, 256, log.sink()}, outside, inside.port);
  std::vector<int> strangers;
  for (int i = 0; i < 64; ++i)
    strangers.push_back(connect_local(outside.port));
  std::this_thread::sleep_for(100ms);
  tunnel t({token, 2000ms, 16, {}}, "n0", outside);
  BOOST_CHECK_EQUAL(echo_through(t.local_port(), "member"), "member");
  BOOST_CHECK_EQUAL(t.refusal(), "");
  for (int fd : strangers)
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_tunnel_whose_gate_closes_before_answering_reports_no_refusal) {
  // A listener that closes every connection at once: a busy gate, or no gate at all yet.
  std::string error;
  const int closer = listen_socket({"127.0.0.1", 0}, error);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(closer, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread loop([&] {
    for (int c; (c = ::accept(closer, nullptr, nullptr)) >= 0;)
      ::close(c);
  });
  tunnel t({token, 2000ms, 16, {}}, "n0", {"127.0.0.1", ntohs(a.sin_port)});
  BOOST_CHECK_EQUAL(echo_through(t.local_port(), "hello"), "");
  std::this_thread::sleep_for(50ms);
  BOOST_CHECK_EQUAL(t.refusal(), ""); // the caller tries again until its own deadline
  ::shutdown(closer, SHUT_RDWR);
  loop.join();
  ::close(closer);
}

BOOST_AUTO_TEST_CASE(refusal_lines_are_bounded_and_count_what_they_left_out) {
  log_budget b(3, 1000ms);
  const auto t0 = log_budget::clock::now();
  BOOST_CHECK(b.admit("a", t0) == std::optional<std::string>("a"));
  BOOST_CHECK(b.admit("b", t0));
  BOOST_CHECK(b.admit("c", t0));
  BOOST_CHECK(!b.admit("d", t0 + 10ms));
  BOOST_CHECK(!b.admit("e", t0 + 900ms));
  BOOST_CHECK_EQUAL(b.left_out(), 2u);
  BOOST_CHECK_EQUAL(*b.admit("f", t0 + 1000ms), "f (2 similar line(s) left out)");
  BOOST_CHECK(!b.admit("g", t0 + 1500ms));
  BOOST_CHECK(b.admit("h", t0 + 5000ms)); // refilled, up to the burst
  BOOST_CHECK(b.admit("i", t0 + 5000ms));
  BOOST_CHECK(b.admit("j", t0 + 5000ms));
  BOOST_CHECK(!b.admit("k", t0 + 5000ms));
}

BOOST_AUTO_TEST_CASE(garbage_and_truncated_client_hellos_are_refused_and_the_gate_goes_on) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  gate_settings s{token, 300ms, 256, log.sink()};
  s.first_bytes_timeout = 200ms;
  s.log_burst = 5;
  s.log_interval = 60s;
  gate g(s, outside, inside.port);
  const auto hello = client_hello(token);
  BOOST_REQUIRE_GT(hello.size(), 100u);
  BOOST_REQUIRE_EQUAL(hello[0], '\x16'); // a TLS handshake record
  std::mt19937 random(20261128);
  constexpr int tries = 48;
  for (int i = 0; i < tries; ++i) {
    std::string input;
    switch (i % 4) {
    case 0: // random bytes
      input.resize(random() % 600);
      for (auto& c : input)
        c = static_cast<char>(random());
      break;
    case 1: // this job's ClientHello, truncated
      input = hello.substr(0, random() % hello.size());
      break;
    case 2: // this job's ClientHello with bytes flipped
      input = hello;
      for (int k = 0; k < 1 + static_cast<int>(random() % 8); ++k)
        input[random() % input.size()] ^= static_cast<char>(1 + random() % 255);
      break;
    default: // a TLS record header claiming the most, then random
      input = std::string("\x16\x03\x01\xff\xff", 5) + std::string(random() % 64, '\x01');
    }
    const int c = connect_local(outside.port);
    if (!input.empty())
      ::send(c, input.data(), input.size(), MSG_NOSIGNAL);
    receive(c, 1 << 16); // an alert at most, then the end (or receive's second)
    ::close(c);
  }
  for (int i = 0; i < 100 && g.refused() < tries; ++i)
    std::this_thread::sleep_for(20ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_EQUAL(g.refused(), uint64_t(tries));
  BOOST_CHECK_EQUAL(log.lines.size(), 5u); // the burst, then none within the minute
  // The job is unharmed: a member still gets through.
  tunnel t({token, 2000ms, 16, {}}, "n0", outside);
  BOOST_CHECK_EQUAL(echo_through(t.local_port(), "still here"), "still here");
}

BOOST_AUTO_TEST_SUITE_END()
