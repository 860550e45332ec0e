#include "transport/tls_stream.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

namespace deepcee::transport {

namespace {

void set_non_blocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/// A TLS record's worth: what one SSL_read can give, and what one SSL_write takes.
constexpr size_t chunk_bytes = 16 * 1024;

/// The exporter label (RFC 8446 7.5) of the token proof: a proof is good for one session.
constexpr std::string_view exporter_label = "EXPORTER-deepcee-token-proof";

/// How an SSL_ERROR_SSL ended, by the first error in the queue.
tls_ending ending_of_ssl_error() {
  const unsigned long e = ERR_peek_error();
  if (ERR_GET_LIB(e) != ERR_LIB_SSL)
    return tls_ending::error;
  const int reason = ERR_GET_REASON(e);
  if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
    return tls_ending::cut;
  // OpenSSL reports an alert received as its description plus SSL_AD_REASON_OFFSET.
  return reason >= SSL_AD_REASON_OFFSET ? tls_ending::alert : tls_ending::error;
}

} // namespace

tls_stream::tls_stream(const tls_context& ctx, int fd, bool server)
    : fd_(fd), psk_(ctx.psk()), checks_peer_(!server || ctx.verifies_clients()) {
  ERR_clear_error();
  ssl_ = SSL_new(ctx.native());
  if (!ssl_)
    throw std::runtime_error("OpenSSL cannot make a TLS connection: " + tls_error_text("?"));
  SSL_set_app_data(ssl_, &seen_);
  set_non_blocking(fd);
  SSL_set_fd(ssl_, fd);
  if (server)
    SSL_set_accept_state(ssl_);
  else
    SSL_set_connect_state(ssl_);
}

tls_stream::~tls_stream() {
  SSL_free(ssl_);
}

tls_stream::outcome tls_stream::classify(int r, short& events) {
  if (r > 0)
    return outcome::done;
  switch (SSL_get_error(ssl_, r)) {
  case SSL_ERROR_WANT_READ:
    events = POLLIN;
    return outcome::again;
  case SSL_ERROR_WANT_WRITE:
    events = POLLOUT;
    return outcome::again;
  case SSL_ERROR_ZERO_RETURN:
    failure_ = "it closed the connection";
    ending_ = tls_ending::closed;
    return outcome::ended;
  case SSL_ERROR_SYSCALL:
    failure_ = ERR_peek_error() ? tls_error_text("?") : "it closed the connection";
    ending_ = tls_ending::cut;
    return outcome::ended;
  default:
    ending_ = ending_of_ssl_error();
    failure_ =
        ending_ == tls_ending::cut ? "it closed the connection" : tls_error_text("a TLS error");
    ERR_clear_error();
    return outcome::ended;
  }
}

bool tls_stream::wait(short events, clock::time_point deadline) const {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
  pollfd pfd{fd_, events, 0};
  return left > 0 && ::poll(&pfd, 1, static_cast<int>(left)) > 0;
}

std::string tls_stream::psk_refusal() const {
  if (seen_.offered && !seen_.matched)
    return "it does not hold the job's token (its PSK identity is another job's)";
  if (seen_.matched)
    return "it does not hold the job's token (" + failure_ + ")";
  if (SSL_is_server(ssl_))
    return "the TLS handshake failed (no PSK offered: " + failure_ + ")";
  if (ending_ == tls_ending::alert)
    return "it does not hold the job's token";
  if (SSL_get_verify_result(ssl_) != X509_V_OK)
    return "it answered with a certificate, not with the job's PSK";
  return "the TLS handshake failed (" + failure_ + ")";
}

std::string tls_stream::handshake(clock::time_point deadline, const std::string& expected,
                                  const std::vector<std::string>& allowed) {
  ERR_clear_error();
  while (true) {
    short events = 0;
    switch (classify(SSL_do_handshake(ssl_), events)) {
    case outcome::done:
      if (!psk_)
        return checks_peer_ ? check_peer(ssl_, expected, allowed) : "";
      // Never without the PSK: a client that took a certificate instead failed above.
      return SSL_session_reused(ssl_) == 1 ? "" : "it did not use the job's PSK";
    case outcome::again:
      if (!wait(events, deadline)) {
        ending_ = tls_ending::cut;
        return "it stalled in the TLS handshake";
      }
      break;
    case outcome::ended:
      if (psk_)
        return psk_refusal();
      if (const long v = SSL_get_verify_result(ssl_); v != X509_V_OK)
        return std::string("its certificate does not chain to the job's CA (") +
               X509_verify_cert_error_string(v) + ")";
      return "the TLS handshake failed (" + failure_ + ")";
    }
  }
}

std::string tls_stream::prove_token(const key32& proof_key, bool server,
                                    clock::time_point deadline) {
  std::array<uint8_t, 32> exported{};
  if (SSL_export_keying_material(ssl_, exported.data(), exported.size(), exporter_label.data(),
                                 exporter_label.size(), nullptr, 0, 0) != 1)
    return "no TLS exporter (" + tls_error_text("?") + ")";
  const auto client = hmac_sha256(proof_key, "client proof", exported);
  const auto server_proof = hmac_sha256(proof_key, "server proof", exported);
  key32 theirs{};
  if (server) {
    if (!read_exact(theirs.data(), theirs.size(), deadline))
      return "it closed the connection or stalled before it proved the job's token";
    if (!same_bytes(theirs, client)) {
      SSL_shutdown(ssl_); // our close_notify: an authenticated refusal
      return "it does not hold the job's token";
    }
    if (!write_all(server_proof.data(), server_proof.size(), deadline))
      return "it closed the connection during the token proof";
    return {};
  }
  if (!write_all(client.data(), client.size(), deadline) ||
      !read_exact(theirs.data(), theirs.size(), deadline)) {
    if (ending_ == tls_ending::closed)
      return "it does not hold the job's token";
    if (ending_ == tls_ending::alert)
      return "it refused this node's certificate (" + failure_ + ")";
    return "it closed the connection or stalled before it proved the job's token";
  }
  if (!same_bytes(theirs, server_proof))
    return "it does not hold the job's token";
  return {};
}

template <class Io>
bool tls_stream::move_all(Io io, size_t n, clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    short events = 0;
    const int r = io(done, n - done);
    switch (classify(r, events)) {
    case outcome::done:
      done += static_cast<size_t>(r);
      break;
    case outcome::again:
      if (!wait(events, deadline)) {
        failure_ = "it stalled";
        ending_ = tls_ending::cut;
        return false;
      }
      break;
    case outcome::ended:
      return false;
    }
  }
  return true;
}

bool tls_stream::read_exact(uint8_t* p, size_t n, clock::time_point deadline) {
  return move_all(
      [&](size_t at, size_t count) { return SSL_read(ssl_, p + at, static_cast<int>(count)); }, n,
      deadline);
}

size_t tls_stream::read_some(uint8_t* p, size_t n, clock::time_point deadline) {
  while (true) {
    short events = 0;
    const int r = SSL_read(ssl_, p, static_cast<int>(std::min(n, chunk_bytes)));
    switch (classify(r, events)) {
    case outcome::done:
      return static_cast<size_t>(r);
    case outcome::again:
      if (!wait(events, deadline)) {
        failure_ = "it stalled";
        ending_ = tls_ending::cut;
        return 0;
      }
      break;
    case outcome::ended:
      return 0;
    }
  }
}

void tls_stream::close_notify() {
  SSL_shutdown(ssl_);
}

bool tls_stream::write_all(const uint8_t* p, size_t n, clock::time_point deadline) {
  return move_all(
      [&](size_t at, size_t count) { return SSL_write(ssl_, p + at, static_cast<int>(count)); }, n,
      deadline);
}

std::string tls_stream::failure(const std::string& otherwise) const {
  return failure_.empty() ? otherwise : failure_;
}

std::string tls_stream::key_exchange_group() const {
  const int group = SSL_get_negotiated_group(ssl_);
  if (group <= 0)
    return {};
  const char* name = SSL_group_to_name(ssl_, group);
  return name ? name : "?";
}

tls_ending tls_stream::splice(int plain, uint64_t key_update_bytes) {
  const auto end = splice_until_end(plain, key_update_bytes);
  if (end == tls_ending::closed)
    SSL_shutdown(ssl_); // our close_notify: one try, the socket closes either way
  return end;
}

/// What a splice holds between its steps. `out` holds what CAF gave until SSL_write takes
/// all of it (a retried SSL_write must get the same bytes); `in` what SSL_read gave until
/// CAF's socket took it. A side is read again only once poll() says so after it said
/// EAGAIN (or, for CAF's socket, gave less than asked): a system call saved per read.
struct tls_stream::splice_state {
  int plain;
  uint64_t key_update_bytes;
  std::vector<uint8_t> out = std::vector<uint8_t>(chunk_bytes);
  std::vector<uint8_t> in = std::vector<uint8_t>(chunk_bytes);
  size_t out_size = 0, in_size = 0, in_sent = 0;
  uint64_t sent_since_update = 0;
  short write_wants = 0, read_wants = POLLIN;
  bool plain_ready = true, tls_ready = true;
  bool hung_up = false;  ///< poll() reported an error or hang-up
  bool progress = false; ///< some bytes moved in this round
};

std::optional<tls_ending> tls_stream::take_from_plain(splice_state& s) {
  if (s.out_size > 0 || !s.plain_ready)
    return std::nullopt;
  const auto got = ::recv(s.plain, s.out.data(), s.out.size(), 0);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
    return tls_ending::closed; // CAF's side ended: we close, with our close_notify
  if (got < 0 && errno == EAGAIN)
    s.plain_ready = false;
  if (got > 0) {
    s.out_size = static_cast<size_t>(got);
    s.plain_ready = s.out_size == s.out.size();
    s.progress = true;
  }
  return std::nullopt;
}

std::optional<tls_ending> tls_stream::write_to_tls(splice_state& s) {
  s.write_wants = 0;
  if (s.out_size == 0)
    return std::nullopt;
  const int r = SSL_write(ssl_, s.out.data(), static_cast<int>(s.out_size));
  const auto o = classify(r, s.write_wants);
  if (o == outcome::ended)
    return ending_;
  if (o != outcome::done)
    return std::nullopt;
  s.sent_since_update += s.out_size;
  s.out_size = 0; // without partial writes, SSL_write takes all or nothing
  s.progress = true;
  // AES-GCM's limits per key are far beyond this (RFC 8446 5.5): a fresh sending key every
  // `key_update_bytes`, sent with the next record.
  if (s.sent_since_update >= s.key_update_bytes &&
      SSL_key_update(ssl_, SSL_KEY_UPDATE_NOT_REQUESTED) == 1) {
    ++key_updates_;
    s.sent_since_update = 0;
  }
  return std::nullopt;
}

std::optional<tls_ending> tls_stream::read_from_tls(splice_state& s) {
  if (s.in_size != s.in_sent || !(s.tls_ready || SSL_has_pending(ssl_)))
    return std::nullopt;
  s.read_wants = 0;
  const int r = SSL_read(ssl_, s.in.data(), static_cast<int>(s.in.size()));
  const auto o = classify(r, s.read_wants);
  if (o == outcome::ended)
    return ending_;
  // A read that filled less than the buffer took all the socket had (OpenSSL reads ahead):
  // the TLS side is read again once poll() says so, or while OpenSSL holds bytes of its own.
  s.tls_ready =
      o == outcome::done && (static_cast<size_t>(r) == s.in.size() || SSL_has_pending(ssl_) == 1);
  if (o == outcome::done) {
    s.read_wants = POLLIN;
    s.in_size = static_cast<size_t>(r);
    s.in_sent = 0;
    s.progress = true;
  }
  return std::nullopt;
}

std::optional<tls_ending> tls_stream::give_to_plain(splice_state& s) {
  if (s.in_sent >= s.in_size)
    return std::nullopt;
  const auto put = ::send(s.plain, s.in.data() + s.in_sent, s.in_size - s.in_sent, MSG_NOSIGNAL);
  if (put < 0 && errno != EAGAIN && errno != EINTR)
    return tls_ending::closed;
  if (put > 0) {
    s.in_sent += static_cast<size_t>(put);
    s.progress = true;
  }
  return std::nullopt;
}

bool tls_stream::wait_for_either(splice_state& s) const {
  std::array<pollfd, 2> fds{
      pollfd{s.plain,
             static_cast<short>((s.out_size == 0 ? POLLIN : 0) |
                                (s.in_sent < s.in_size ? POLLOUT : 0)),
             0},
      pollfd{fd_, static_cast<short>(s.write_wants | (s.in_size == s.in_sent ? s.read_wants : 0)),
             0}};
  if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
    return false;
  if (fds[0].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL))
    s.plain_ready = true;
  if (fds[1].revents != 0)
    s.tls_ready = true;
  for (const auto& f : fds)
    if (f.revents & (POLLERR | POLLHUP | POLLNVAL))
      s.hung_up = true;
  return true;
}

tls_ending tls_stream::splice_until_end(int plain, uint64_t key_update_bytes) {
  set_non_blocking(plain);
  splice_state s{.plain = plain, .key_update_bytes = key_update_bytes};
  while (true) {
    s.progress = false;
    for (auto step : {&tls_stream::take_from_plain, &tls_stream::write_to_tls,
                      &tls_stream::read_from_tls, &tls_stream::give_to_plain})
      if (auto end = (this->*step)(s))
        return *end;
    if (s.progress) {
      s.hung_up = false;
      continue;
    }
    if (s.hung_up) // an error or hang-up reported, and nothing moved since: the end
      return tls_ending::cut;
    if (!wait_for_either(s))
      return tls_ending::cut;
  }
}

} // namespace deepcee::transport
