#include "transport/local_guard.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace deepcee::transport {

namespace {

constexpr uint32_t loopback = 0x7f000001; // 127.0.0.1
constexpr std::string_view listening_state = "0A";
constexpr std::string_view time_wait_state = "06"; ///< ended; also another socket's past use
constexpr std::string_view closed_state = "07";

/// "0100007F:1F90" (the address as the kernel's 32 bits print on this host, the port in
/// host order) as an endpoint.
std::optional<v4_endpoint> parse_endpoint(std::string_view text) {
  const auto colon = text.find(':');
  if (colon != 8 || text.size() != 13)
    return std::nullopt;
  uint32_t raw = 0;
  uint16_t port = 0;
  if (std::from_chars(text.data(), text.data() + 8, raw, 16).ec != std::errc{} ||
      std::from_chars(text.data() + 9, text.data() + 13, port, 16).ec != std::errc{})
    return std::nullopt;
  return v4_endpoint{ntohl(raw), port};
}

/// Calls `row(local, remote, state, inode)` for every socket /proc/net/tcp lists; stops when
/// it returns true.
template <class Row>
void for_each_socket(std::string_view text, Row row) {
  std::istringstream lines{std::string(text)};
  std::string line;
  std::getline(lines, line); // the header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    const auto l = parse_endpoint(local);
    const auto r = parse_endpoint(remote);
    uint64_t node = 0;
    if (!l || !r ||
        std::from_chars(inode.data(), inode.data() + inode.size(), node).ec != std::errc{})
      continue;
    if (row(*l, *r, state, node))
      return;
  }
}

std::string read_proc_net_tcp() {
  std::ifstream in("/proc/net/tcp");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<v4_endpoint> endpoint_of(const sockaddr_in& a) {
  if (a.sin_family != AF_INET)
    return std::nullopt;
  return v4_endpoint{ntohl(a.sin_addr.s_addr), ntohs(a.sin_port)};
}

/// Calls `fd(n)` for every descriptor of this process; stops when it returns true.
template <class Fd>
void for_each_fd(Fd fd) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir)
    return;
  while (const dirent* e = ::readdir(dir)) {
    int n = -1;
    const std::string_view name = e->d_name;
    if (std::from_chars(name.data(), name.data() + name.size(), n).ec == std::errc{} &&
        n != ::dirfd(dir) && fd(n))
      break;
  }
  ::closedir(dir);
}

bool holds_inode(uint64_t inode) {
  const auto want = "socket:[" + std::to_string(inode) + "]";
  bool found = false;
  for_each_fd([&](int n) {
    char target[64];
    const auto path = "/proc/self/fd/" + std::to_string(n);
    const auto len = ::readlink(path.c_str(), target, sizeof target);
    found = len > 0 && std::string_view(target, static_cast<size_t>(len)) == want;
    return found;
  });
  return found;
}

/// This process's socket that listens on 127.0.0.1:`port`, duplicated, or -1.
int duplicate_listener(uint16_t port) {
  int found = -1;
  for_each_fd([&](int n) {
    int listening = 0;
    socklen_t len = sizeof listening;
    sockaddr_in a{};
    socklen_t alen = sizeof a;
    if (::getsockopt(n, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening ||
        ::getsockname(n, reinterpret_cast<sockaddr*>(&a), &alen) != 0 ||
        endpoint_of(a) != v4_endpoint{loopback, port})
      return false;
    found = ::fcntl(n, F_DUPFD_CLOEXEC, 0);
    return true;
  });
  return found;
}

/// A classic BPF socket filter: a TCP segment from 127.0.0.1 at one of `ports` passes, any
/// other is dropped (the source address from the network header, the port from the TCP
/// header the filter sees first).
std::vector<sock_filter> filter_for(const std::multiset<uint16_t>& ports) {
  const auto n = static_cast<uint8_t>(ports.size());
  std::vector<sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(SKF_NET_OFF + 12)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, loopback, 0, static_cast<uint8_t>(n + 1)));
  prog.push_back(BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0));
  uint8_t k = 0;
  for (const auto port : ports) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, static_cast<uint8_t>(n - k), 0));
    ++k;
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, 0));          // drop
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, 0xffffffff)); // pass
  return prog;
}

} // namespace

std::optional<uint64_t> tcp_socket_inode(std::string_view proc_net_tcp, v4_endpoint local,
                                         v4_endpoint remote) {
  std::optional<uint64_t> found;
  for_each_socket(proc_net_tcp, [&](v4_endpoint l, v4_endpoint r, const std::string&, uint64_t i) {
    if (l == local && r == remote)
      found = i;
    return found.has_value();
  });
  return found;
}

std::vector<uint64_t> tcp_connections_at(std::string_view proc_net_tcp, v4_endpoint local) {
  std::vector<uint64_t> inodes;
  for_each_socket(proc_net_tcp, [&](v4_endpoint l, v4_endpoint, const std::string& state,
                                    uint64_t inode) {
    if (l == local && state != listening_state && state != time_wait_state && state != closed_state)
      inodes.push_back(inode);
    return false;
  });
  return inodes;
}

bool from_this_process(int fd) {
  sockaddr_in self{}, peer{};
  socklen_t a = sizeof self, b = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &a) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0)
    return false;
  const auto local = endpoint_of(self);
  const auto remote = endpoint_of(peer);
  if (!local || !remote)
    return false;
  // The other end: the socket whose own address is our peer's, connected to ours.
  const auto inode = tcp_socket_inode(read_proc_net_tcp(), *remote, *local);
  return inode && holds_inode(*inode);
}

guarded_socket listen_guarded() {
  const auto failed = [](const char* what, int fd) {
    const std::string why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error(std::string("cannot ") + what + " a port on 127.0.0.1 (" + why + ")");
  };
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    failed("open", fd);
  const auto prog = filter_for({}); // drops every connection request
  const sock_fprog fprog{static_cast<unsigned short>(prog.size()),
                         const_cast<sock_filter*>(prog.data())};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) != 0)
    failed("filter", fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(loopback);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    failed("bind", fd);
  if (::listen(fd, SOMAXCONN) != 0)
    failed("listen on", fd);
  return {fd, ntohs(a.sin_port)};
}

listener_guard::listener_guard(uint16_t port) : port_(port) {
  fd_ = duplicate_listener(port);
  if (fd_ < 0)
    throw std::runtime_error("no socket of this process listens on 127.0.0.1:" +
                             std::to_string(port));
  std::lock_guard lock(mutex_);
  if (!install())
    throw std::runtime_error("cannot filter 127.0.0.1:" + std::to_string(port) + " (" +
                             std::strerror(errno) + ")");
  // A connection to the listener: not accepted yet (no inode), or accepted by this process.
  // (Another process's socket at the same local port is no connection to it.)
  for (const auto inode : tcp_connections_at(read_proc_net_tcp(), {loopback, port}))
    if (inode == 0 || holds_inode(inode))
      throw std::runtime_error("a local process connected to 127.0.0.1:" + std::to_string(port) +
                               " before it was guarded");
}

listener_guard::~listener_guard() {
  ::close(fd_);
}

bool listener_guard::install() {
  auto prog = filter_for(dialing_);
  const sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  return ::setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) == 0;
}

listener_guard::dialed listener_guard::dial(std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return {};
  // Bound before the filter lets its port through: from here on no other socket can hold it
  // (no SO_REUSEADDR or SO_REUSEPORT here).
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(loopback);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return {};
  }
  const uint16_t source = ntohs(a.sin_port);
  {
    std::lock_guard lock(mutex_);
    if (dialing_.size() >= max_dialing) {
      ::close(fd);
      return {};
    }
    dialing_.insert(source);
    install();
  }
  a.sin_port = htons(port_);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc < 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t elen = sizeof err;
    rc = ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
                 ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0
             ? 0
             : -1;
  }
  if (rc < 0) {
    forget(source);
    ::close(fd);
    return {};
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return {fd, source};
}

void listener_guard::forget(uint16_t port) {
  std::lock_guard lock(mutex_);
  if (const auto it = dialing_.find(port); it != dialing_.end()) {
    dialing_.erase(it);
    install();
  }
}

} // namespace deepcee::transport
