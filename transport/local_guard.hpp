#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

/// The local hop, authenticated as the network's is: no other process on the node's host,
/// whatever its user, reaches the job through a port on 127.0.0.1.
///
/// Two kinds of local port carry a node's CAF traffic. A tunnel's port takes CAF's outgoing
/// connections: the tunnel accepts only a connection whose other end is a socket of this
/// very process (`from_this_process`, by the socket's inode in /proc). CAF's own listening
/// port takes what a gate let through: CAF accepts by itself, so a `listener_guard` puts a
/// socket filter on that listening socket which drops every connection request but those
/// from 127.0.0.1 at a source port that one of this process's own sockets holds while it
/// dials (`listener_guard::dial`). A port held by a socket cannot be bound by another user,
/// so no stranger's connection request gets through, and none is ever accepted.
namespace deepcee::transport {

/// An IPv4 address and port, both in host byte order.
struct v4_endpoint {
  uint32_t address = 0;
  uint16_t port = 0;
  bool operator==(const v4_endpoint&) const = default;
};

/// The inode of the TCP socket at `local` connected to `remote`, as /proc/net/tcp's text
/// lists them, or none. Pure.
std::optional<uint64_t> tcp_socket_inode(std::string_view proc_net_tcp, v4_endpoint local,
                                         v4_endpoint remote);
/// The inodes of the sockets at `local` that /proc/net/tcp's text lists as connected or
/// connecting (neither listening nor closed; 0: one not accepted yet). Pure.
std::vector<uint64_t> tcp_connections_at(std::string_view proc_net_tcp, v4_endpoint local);

/// Whether the TCP connection `fd` (accepted on 127.0.0.1) was made by a socket of this
/// process.
bool from_this_process(int fd);

/// A socket of this process listening on 127.0.0.1 at an ephemeral port, filtered from
/// before it listens: no connection request gets through until a `listener_guard` on its port
/// lets its own dials through, so no stranger reaches it in the moment before that guard.
struct guarded_socket {
  int fd = -1;
  uint16_t port = 0;
};
/// Throws std::runtime_error naming what failed.
guarded_socket listen_guarded();

/// Guards the socket that listens on 127.0.0.1:`port` in this process and that something
/// else accepts on (CAF's middleman): only `dial` reaches it.
class listener_guard {
public:
  /// Throws std::runtime_error when no socket of this process listens there, or when a
  /// connection reached it before it was guarded (nothing of the job may have come through).
  explicit listener_guard(uint16_t port);
  ~listener_guard();
  listener_guard(const listener_guard&) = delete;
  listener_guard& operator=(const listener_guard&) = delete;

  struct dialed {
    int fd = -1;       ///< a connection to the guarded port (blocking), or -1
    uint16_t port = 0; ///< its source port, let through until `forget`
  };
  /// A connection to the guarded port; fd -1 when it does not come within `timeout` or too
  /// many are open at once. Its source port stays let through (the accepted side's filter
  /// is copied from the listener's when the handshake completes) until `forget`.
  dialed dial(std::chrono::milliseconds timeout);
  /// No longer lets `port` through: called before its socket closes (a port no socket holds
  /// may be bound by anyone).
  void forget(uint16_t port);

  /// Connections open at once through `dial`, at most.
  static constexpr size_t max_dialing = 128;

private:
  /// Puts the filter for `dialing_` on the listening socket (under `mutex_`).
  bool install();

  int fd_ = -1; ///< a duplicate of the listening socket
  uint16_t port_;
  std::mutex mutex_;
  std::multiset<uint16_t> dialing_;
};

} // namespace deepcee::transport
