#pragma once

#include "tools/http_head.hpp"
#include "transport/tls_identity.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

/// An HTTP listener that bounds what a client can make it hold before cpp-httplib reads a
/// byte: the connections open at once (in all and from one address), the time and bytes of
/// a request's head (request line, header lines and bytes: http_head.hpp), and its body
/// (none is read). It accepts, reads the head itself and checks it, and only then hands the
/// head to cpp-httplib's routing (`http_routes`) with the connection's socket for the
/// answer. One request per connection (the answer says `Connection: close`), so every
/// request's head passes the same check.
///
/// A connection past a cap closes the oldest one still sending its head (of its address
/// when that address is at its cap), as transport's gate does: strangers who hold idle
/// connections cannot keep a client out, and one that sends its head at once always gets
/// through. When every connection is being answered (streams), one more is refused. Refused
/// connections are closed, each with one log line naming the peer, through a log_budget.
namespace deepcee::tools {

/// cpp-httplib's server as routes only: it never listens; `serve` answers one request whose
/// head bounded_http read.
class http_routes : public httplib::Server {
public:
  /// Answers the request on `s`; false when the connection failed.
  bool serve(httplib::Stream& s);
  /// While closed, streams (chunked content providers) end at their next chunk.
  void set_open(bool open, int fd);
};

struct bounded_http_settings {
  http_head_limits head{};
  /// The time a new connection has to send its whole head.
  std::chrono::milliseconds head_timeout{3000};
  /// The time an answer's write may wait for the client to read: a client that does not
  /// read loses its connection.
  std::chrono::milliseconds write_timeout{2000};
  int max_connections = 64;
  int max_per_address = 8;
  /// One line per refused peer (rate-limited: `log_burst` at once, then one a second).
  std::function<void(const std::string&)> log;
  int log_burst = 10;
  /// Set: HTTPS, TLS 1.3 with this context's certificate (a node's, asking clients for
  /// none: transport::client_certificates::none); its handshake counts in the head's time.
  std::shared_ptr<const transport::tls_context> tls{};
};

class bounded_http {
public:
  bounded_http(http_routes& routes, bounded_http_settings settings);
  ~bounded_http();
  bounded_http(const bounded_http&) = delete;
  bounded_http& operator=(const bounded_http&) = delete;

  /// Listens on `host`:`port` (0: any free port) and serves from threads of its own;
  /// returns the port. Throws std::runtime_error naming the address when it cannot.
  uint16_t start(const std::string& host, uint16_t port);
  /// Closes every connection and waits for their threads.
  void stop();
  /// Connections refused so far (bounds, caps, time, and those refuse_request counted).
  uint64_t refused() const;
  /// A request its routes refused (a foreign Host, no credential): one line naming the
  /// peer ("HOST:PORT"), within the same log budget as the acceptor's.
  void refuse_request(const std::string& peer, const std::string& why);

  struct state;

private:
  std::shared_ptr<state> state_;
  std::thread acceptor_;
};

} // namespace deepcee::tools
