#pragma once

#include "tools/snapshot_board.hpp"
#include "transport/tls_identity.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// The read-only inspection endpoint of a running job (HTTP, cpp-httplib), served by the
/// coordinator's node of `deepcee run` and `deepcee node` from threads of its own. It only
/// reads the snapshot board the job publishes on, so a client can neither steer the job nor
/// make it wait.
///
/// With a credential (the job's watch credential, watch_credential.hpp: never the job's
/// token), every request but the page and its scripts needs `Authorization: Bearer
/// CREDENTIAL` or gets 401. A request whose Host names another host than the node's gets 403
/// (DNS rebinding). Another method on a route gets 405, an unknown path 404. Each
/// /api/stream client has a bounded queue; frames it does not take are dropped and counted.
/// Connections, request heads and bodies are bounded before cpp-httplib reads a byte
/// (bounded_http.hpp); refused peers are logged through `log`, one line each.
/// The page's scripts are under /static/, with Chart.js embedded at build time. Routes (one
/// table, inspect_server.cpp):
///
///     GET /api/snapshot   the latest snapshot, one JSON line
///     GET /api/stream     JSON lines (chunked), one per new snapshot
///     GET /api/history    the run so far by step, for charts opened late
///     GET /metrics        the latest snapshot in Prometheus text format
///     GET /               a page with live charts (polls /api/snapshot)
namespace deepcee::tools {

/// Where the endpoint listens.
struct inspect_address {
  std::string host = "127.0.0.1";
  uint16_t port = 0; ///< 0: an ephemeral one

  std::string text() const;
};

/// "HOST:PORT" (PORT 0: ephemeral), or "off" (nullopt). Throws input_error naming `source`.
std::optional<inspect_address> parse_inspect_address(std::string_view text,
                                                     const std::string& source);

struct inspect_settings {
  /// The watch credential, empty for none; never printed or logged.
  std::string credential;
  /// The names the node is reached by, besides the address it binds, this host's name and
  /// localhost: a Host header must name one of them, or an address.
  std::vector<std::string> host_names{};
  /// One line per refused peer (rate-limited).
  std::function<void(const std::string&)> log{};
  /// Set: HTTPS with the node's certificate (transport::client_certificates::none).
  std::shared_ptr<const transport::tls_context> tls{};
};

class inspect_server {
public:
  inspect_server(snapshot_board& board, inspect_settings settings);
  ~inspect_server();
  inspect_server(const inspect_server&) = delete;
  inspect_server& operator=(const inspect_server&) = delete;

  /// Binds `at` and serves in a thread of its own; returns the port bound. Throws
  /// std::runtime_error naming the address when it cannot bind.
  uint16_t start(const inspect_address& at);
  /// Ends every stream and joins the threads (the destructor does it too).
  void stop();

  /// Frames a streaming client gets queued at most.
  static constexpr size_t stream_queue = 16;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepcee::tools
