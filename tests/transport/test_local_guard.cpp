// The local hop: a listener that CAF accepts on lets through only what its guard dials, a
// tunnel's port tells this process's sockets from another process's, and /proc/net/tcp's
// lines are read as the kernel writes them.
#include "socket_test_util.hpp"
#include "transport/local_guard.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>

using namespace deepcee::transport;
using namespace deepcee::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(local_guard)

namespace {

// Two sockets as /proc/net/tcp lists them: one listening on 0.0.0.0:2024, and
// 127.0.0.1:35545 connected to 127.0.0.1:38320.
const char* const proc_net_tcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
    "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "167 1 00000000c0b46fda 100 0 0 10 0\n"
    "   1: 0100007F:8AD9 0100007F:95B0 01 00000000:00000000 03:00001317 00000000     0        0 "
    "4242 3 00000000807a2920\n";

/// Whether a connection to 127.0.0.1:`port` from a socket of its own comes within 300 ms.
bool stranger_connects(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  pollfd p{fd, POLLOUT, 0};
  int err = -1;
  socklen_t len = sizeof err;
  const bool connected = ::poll(&p, 1, 300) == 1 &&
                         ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  ::close(fd);
  return connected;
}

} // namespace

BOOST_AUTO_TEST_CASE(proc_net_tcp_lines_are_read_as_the_kernel_writes_them) {
  constexpr uint32_t lo = 0x7f000001;
  BOOST_TEST(tcp_socket_inode(proc_net_tcp, {lo, 35545}, {lo, 38320}).value_or(0) == 4242u);
  BOOST_TEST(!tcp_socket_inode(proc_net_tcp, {lo, 38320}, {lo, 35545}).has_value());
  BOOST_TEST(tcp_connections_at(proc_net_tcp, {lo, 35545}) == std::vector<uint64_t>{4242});
  BOOST_TEST(tcp_connections_at(proc_net_tcp, {0, 2024}).empty()); // listening only
  BOOST_TEST(!tcp_socket_inode("garbage\n0: zz:zz", {lo, 1}, {lo, 2}).has_value());
}

BOOST_AUTO_TEST_CASE(a_guarded_listener_takes_only_what_its_guard_dials) {
  echo_server inside;
  listener_guard guard(inside.port);
  BOOST_TEST(!stranger_connects(inside.port));
  const auto d = guard.dial(1000ms);
  BOOST_REQUIRE(d.fd >= 0);
  BOOST_TEST(::send(d.fd, "ping", 4, MSG_NOSIGNAL) == 4);
  BOOST_TEST(receive(d.fd, 4) == "ping");
  BOOST_TEST(inside.accepted == 1);
  guard.forget(d.port);
  BOOST_TEST(!stranger_connects(inside.port)); // what was let through is let through no more
  ::close(d.fd);
}

BOOST_AUTO_TEST_CASE(a_socket_guarded_before_it_listens_is_never_reached_by_a_stranger) {
  const auto inside = listen_guarded();
  BOOST_REQUIRE(inside.fd >= 0);
  BOOST_TEST(!stranger_connects(inside.port)); // listening, and no guard on it yet
  listener_guard guard(inside.port);           // nothing reached it: it takes over
  BOOST_TEST(!stranger_connects(inside.port));
  const auto d = guard.dial(1000ms);
  BOOST_REQUIRE(d.fd >= 0);
  const int accepted = ::accept(inside.fd, nullptr, nullptr);
  BOOST_TEST(accepted >= 0);
  BOOST_TEST(::send(d.fd, "ping", 4, MSG_NOSIGNAL) == 4);
  BOOST_TEST(receive(accepted, 4) == "ping");
  ::close(accepted);
  ::close(d.fd);
  guard.forget(d.port);
  ::close(inside.fd);
}

BOOST_AUTO_TEST_CASE(a_listener_reached_before_it_was_guarded_is_refused) {
  echo_server inside;
  const int early = connect_local(inside.port);
  BOOST_CHECK_THROW(listener_guard{inside.port}, std::runtime_error);
  ::close(early);
  BOOST_CHECK_THROW(listener_guard{free_port()}, std::runtime_error); // nothing listens
}

BOOST_AUTO_TEST_CASE(a_tunnels_port_tells_this_process_from_another) {
  std::string error;
  const int lst = listen_socket({"127.0.0.1", 0}, error);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(lst, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t port = ntohs(a.sin_port);
  const int mine = connect_local(port);
  const int accepted_mine = ::accept(lst, nullptr, nullptr);
  BOOST_TEST(from_this_process(accepted_mine));
  const pid_t child = ::fork();
  if (child == 0) { // another process: connects and waits to be killed
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    ::pause();
    ::_exit(0);
  }
  const int accepted_theirs = ::accept(lst, nullptr, nullptr);
  BOOST_TEST(!from_this_process(accepted_theirs));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  for (int fd : {mine, accepted_mine, accepted_theirs, lst})
    ::close(fd);
}

BOOST_AUTO_TEST_SUITE_END()
