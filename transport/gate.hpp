#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

/// The sockets around tls_stream.hpp. A node's CAF middleman listens on 127.0.0.1 only; its
/// public port belongs to a `gate`, which lets a connection through to CAF only after the
/// peer proved it holds the job's token, and then carries it over TLS 1.3. A node reaches a
/// peer through a `tunnel`: CAF connects to the tunnel's port on 127.0.0.1, and the tunnel
/// dials the peer's gate and authenticates. So CAF's BASP (which allocates whatever payload
/// a header claims, before any check) never sees a byte from a peer that has not
/// authenticated. Nor from another process on the host (local_guard.hpp): the gate guards
/// CAF's port (it must be a listener of this process), and a tunnel takes only this
/// process's connections.
///
/// One wire for both kinds of job: without certificates, TLS 1.3 keyed by the job's token
/// as a pre-shared key; with them (tls_identity.hpp), TLS 1.3 with certificates checked both
/// ways and the token proven inside, bound to the session.
///
/// A gate cannot be exhausted by strangers: a connection must send its first bytes within
/// `first_bytes_timeout` and finish within `handshake_timeout`; at most `max_handshaking`
/// connections wait in the handshake, `max_handshaking_per_address` from one address, and
/// one past a cap closes the oldest waiting one (of its address) rather than being turned
/// away. Its refusals are logged through a `log_budget`.
///
/// Every connection has its own thread; the accept loops have theirs. Nothing here logs
/// by itself: what a gate or tunnel refuses goes to `gate_settings::log`, one line each.
namespace deepcee::transport {

struct endpoint {
  std::string host;
  uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

class tls_context;

struct gate_settings {
  std::string token; ///< the job's token (job_token.hpp); never logged
  /// The time a peer has for the whole handshake.
  std::chrono::milliseconds handshake_timeout{5000};
  /// Connections in the handshake at once; one more closes the oldest of them.
  int max_handshaking = 256;
  std::function<void(const std::string&)> log; ///< one line per refused peer (rate-limited)
  /// Set: TLS 1.3 with this node's certificate, peers verified against the job's CA. Unset:
  /// TLS 1.3 with the token's PSK.
  std::shared_ptr<const tls_context> tls{};
  /// A gate's: the nodes a client's certificate may name (the job's nodes).
  std::vector<std::string> peers{};
  /// Connections in the handshake at once from one address (loopback and NAT share one).
  int max_handshaking_per_address = 128;
  /// The time a new connection has to send its first bytes.
  std::chrono::milliseconds first_bytes_timeout{3000};
  /// Each side of a connection changes its sending key after this many bytes.
  uint64_t key_update_bytes = uint64_t(1) << 30;
  /// Refusal lines: this many at once, then one per `log_interval`.
  int log_burst = 20;
  std::chrono::milliseconds log_interval{1000};
};

namespace detail {
struct shared;
}

/// Listens on a node's public port and carries authenticated connections to `inside`, the
/// port of the node's CAF middleman on 127.0.0.1.
class gate {
public:
  /// Throws std::runtime_error naming `outside` when it cannot listen there, or when
  /// `inside` is no listener of this process or was reached before it was guarded.
  gate(gate_settings settings, const endpoint& outside, uint16_t inside);
  ~gate();
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  /// Connections refused so far (no token, bad bytes, too slow, too many at once).
  uint64_t refused() const;
  /// Connections let through to the inside port so far.
  uint64_t admitted() const;

private:
  std::shared_ptr<detail::shared> shared_;
  std::thread acceptor_;
};

/// A local port on 127.0.0.1 whose connections are carried to the gate of `peer`.
class tunnel {
public:
  tunnel(gate_settings settings, std::string peer_name, endpoint peer);
  ~tunnel();
  tunnel(const tunnel&) = delete;
  tunnel& operator=(const tunnel&) = delete;

  uint16_t local_port() const { return local_port_; }
  /// Why the peer's gate was refused ("cannot authenticate node n0 at 127.0.0.1:4000: it
  /// does not hold the job's token"), empty while none was. A peer that cannot be reached is no
  /// refusal: the caller keeps trying until its own deadline.
  std::string refusal() const;

private:
  std::shared_ptr<detail::shared> shared_;
  uint16_t local_port_ = 0;
  std::thread acceptor_;
};

/// Listens on `at` (SO_REUSEADDR; port 0: any free one) and returns the socket, or -1 with
/// `error` set.
int listen_socket(const endpoint& at, std::string& error);

} // namespace deepcee::transport
