#pragma once

#include "transport/tls_identity.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

/// One TLS connection over a socket, driven by one thread: the socket is non-blocking and
/// every SSL call that wants to read or write waits in poll() for that, so the handshake
/// keeps its time limit and the splice serves both directions from one loop (an SSL object
/// must not be used by two threads at once).
namespace deepcee::transport {

class tls_stream {
public:
  using clock = std::chrono::steady_clock;

  /// Takes no ownership of `fd`, which it makes non-blocking.
  tls_stream(const tls_context& ctx, int fd, bool server);
  ~tls_stream();
  tls_stream(const tls_stream&) = delete;
  tls_stream& operator=(const tls_stream&) = delete;

  /// The TLS handshake by `deadline`, then the peer's certificate checked (check_peer).
  /// Why the peer is refused, or "".
  std::string handshake(clock::time_point deadline, const std::string& expected,
                        const std::vector<std::string>& allowed);
  /// Exactly `n` bytes by `deadline`; false at the end of the stream, an error or the time.
  bool read_exact(uint8_t* p, size_t n, clock::time_point deadline);
  bool write_all(const uint8_t* p, size_t n, clock::time_point deadline);
  /// Why the last read or write failed: the peer's TLS alert or OpenSSL's error, if any.
  std::string failure(const std::string& otherwise) const;

  /// Carries `plain` (CAF's side, a socket it makes non-blocking) over this stream in both
  /// directions until either side ends or fails.
  void splice(int plain);

private:
  enum class outcome { done, again, ended };
  /// One SSL call's result: done (r > 0), again (its wish for POLLIN or POLLOUT in
  /// `events`), or ended.
  outcome classify(int r, short& events);
  bool wait(short events, clock::time_point deadline) const;
  /// Calls `io(offset, count)` (SSL_read or SSL_write on the rest) until `n` bytes moved,
  /// waiting while OpenSSL wants the socket, until `deadline`.
  template <class Io>
  bool move_all(Io io, size_t n, clock::time_point deadline);
  void splice_until_end(int plain);

  ssl_st* ssl_ = nullptr;
  int fd_;
  std::string failure_;
};

} // namespace deepcee::transport
