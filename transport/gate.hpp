#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

/// The sockets around handshake.hpp and sealed_records.hpp. A node's CAF middleman listens
/// on 127.0.0.1 only; its public port belongs to a `gate`, which lets a connection through
/// to CAF only after the peer proved it holds the job's token, and then carries it in
/// sealed records. A node reaches a peer through a `tunnel`: CAF connects to the tunnel's
/// port on 127.0.0.1, and the tunnel dials the peer's gate, authenticates and seals. So
/// CAF's BASP (which allocates whatever payload a header claims, before any check) never
/// sees a byte from a peer that has not authenticated.
///
/// With a TLS identity (tls_identity.hpp) gate and tunnel speak TLS 1.3 with certificates
/// checked both ways; the token handshake runs inside it, and TLS records replace the sealed
/// records.
///
/// Every connection has its own thread(s); the accept loops have theirs. Nothing here logs
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
  /// Connections in the handshake at once; a further one is closed at its accept.
  int max_handshaking = 16;
  std::function<void(const std::string&)> log; ///< one line per refused peer
  /// Set: TLS 1.3 with this node's certificate, peers verified against the job's CA.
  std::shared_ptr<const tls_context> tls{};
  /// A gate's: the nodes a client's certificate may name (the job's nodes).
  std::vector<std::string> peers{};
};

namespace detail {
struct shared;
}

/// Listens on a node's public port and carries authenticated connections to `inside`, the
/// port of the node's CAF middleman on 127.0.0.1.
class gate {
public:
  /// Throws std::runtime_error naming `outside` when it cannot listen there.
  gate(gate_settings settings, const endpoint& outside, uint16_t inside);
  ~gate();
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  /// Connections refused so far (no token, bad bytes, too slow, too many at once).
  uint64_t refused() const;

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
