#pragma once

#include "transport/tls_identity.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

/// One TLS connection over a socket, driven by one thread: the socket is non-blocking and
/// every SSL call that wants to read or write waits in poll() for that, so the handshake
/// keeps its time limit and the splice serves both directions from one loop (an SSL object
/// must not be used by two threads at once).
namespace deepcee::transport {

/// How the last read or write of a stream ended.
enum class tls_ending {
  none,   ///< it did not end
  closed, ///< the peer's close_notify: an authenticated end
  cut,    ///< the socket ended or stalled without one: no word from the peer
  alert,  ///< the peer sent a TLS alert: it refused us
  error,  ///< we refused what the peer sent (not TLS, a bad certificate, a bad record)
};

class tls_stream {
public:
  using clock = std::chrono::steady_clock;

  /// Takes no ownership of `fd`, which it makes non-blocking.
  tls_stream(const tls_context& ctx, int fd, bool server);
  ~tls_stream();
  tls_stream(const tls_stream&) = delete;
  tls_stream& operator=(const tls_stream&) = delete;

  /// The TLS handshake by `deadline`, then the peer checked: with certificates, its
  /// certificate (check_peer); with a PSK, that the job's PSK was used. Why the peer is
  /// refused, or "".
  std::string handshake(clock::time_point deadline, const std::string& expected,
                        const std::vector<std::string>& allowed);
  /// With certificates, after the handshake: each side proves it holds the job's token by
  /// an HMAC over this session's TLS exporter, the client first (a server proves nothing to
  /// a client that has not proven itself). Why the peer is refused, or "".
  std::string prove_token(const key32& proof_key, bool server, clock::time_point deadline);
  /// Exactly `n` bytes by `deadline`; false at the end of the stream, an error or the time.
  bool read_exact(uint8_t* p, size_t n, clock::time_point deadline);
  /// What has arrived, `n` bytes at most, by `deadline`: their count, or 0 at the end of the
  /// stream, an error or the time.
  size_t read_some(uint8_t* p, size_t n, clock::time_point deadline);
  bool write_all(const uint8_t* p, size_t n, clock::time_point deadline);
  /// Why the last read or write failed: the peer's TLS alert or OpenSSL's error, if any.
  std::string failure(const std::string& otherwise) const;
  tls_ending ending() const { return ending_; }

  /// Carries `plain` (CAF's side, a socket it makes non-blocking) over this stream in both
  /// directions until either side ends or fails, updating our sending keys every
  /// `key_update_bytes` sent. Ends with our close_notify. Returns how the peer's side ended:
  /// `closed` when it sent its close_notify or the end came from `plain`, else `cut` or
  /// `error` (a truncated or forged stream).
  tls_ending splice(int plain, uint64_t key_update_bytes);
  /// Our close_notify: one try, without waiting (the socket closes either way).
  void close_notify();
  /// Key updates this stream asked for so far (splice).
  uint64_t key_updates() const { return key_updates_; }
  /// The group of the (EC)DHE key exchange ("x25519"), or "" when there was none.
  std::string key_exchange_group() const;

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
  /// The splice's loop and its steps: each moves what it can without blocking, and
  /// returns how the splice ends once it does.
  struct splice_state;
  tls_ending splice_until_end(int plain, uint64_t key_update_bytes);
  std::optional<tls_ending> take_from_plain(splice_state& s);
  std::optional<tls_ending> write_to_tls(splice_state& s);
  std::optional<tls_ending> read_from_tls(splice_state& s);
  std::optional<tls_ending> give_to_plain(splice_state& s);
  /// Waits until either socket may move; false when poll() fails.
  bool wait_for_either(splice_state& s) const;
  std::string psk_refusal() const;

  ssl_st* ssl_ = nullptr;
  int fd_;
  bool psk_;
  bool checks_peer_; ///< false: a server that verifies no client (client_certificates::none)
  psk_seen seen_;
  std::string failure_;
  tls_ending ending_ = tls_ending::none;
  uint64_t key_updates_ = 0;
};

} // namespace deepcee::transport
