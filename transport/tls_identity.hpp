#pragma once

#include "transport/token_keys.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using ssl_ctx_st = struct ssl_ctx_st;
using ssl_st = struct ssl_st;
using x509_st = struct x509_st;

/// A node's TLS identity. With certificates: its certificate and key, and the job's CA that
/// every peer's certificate must chain to. A node is named by its certificate: the subject's
/// CN or a DNS entry of its subjectAltName equals the node's name in the job, so the
/// certificate of n1 cannot serve as n0's. Without: the job's token as an external
/// pre-shared key (token_keys.hpp) in TLS 1.3's PSK-with-(EC)DHE mode.
namespace deepcee::transport {

struct tls_files {
  std::filesystem::path certificate;
  std::filesystem::path key;
  std::filesystem::path ca;
};

/// The names a certificate gives its subject: its DNS subjectAltNames, or, where it has
/// none, its CN (once).
std::vector<std::string> certificate_names(x509_st* cert);

/// The extended key usages that `cert` lacks of those asked ("serverAuth and clientAuth"),
/// or "". A certificate without the extension has none.
std::string missing_usage(x509_st* cert, bool server, bool client);

/// Whether `names` (certificate_names) name `node`, exactly (no wildcards, no case folding:
/// node names are identifiers, not host names).
bool names_node(const std::vector<std::string>& names, const std::string& node);

/// "n1" or "n1, n1.example" or "no name": for a refusal line.
std::string names_text(const std::vector<std::string>& names);

/// Whom a server with certificates asks for one.
enum class client_certificates {
  required, ///< a node's gate: every client shows one that chains to the job's CA
  none,     ///< the inspection endpoint: browsers, Prometheus and `deepcee inspect` show none
};

/// An OpenSSL context for TLS 1.3 only, with mutual verification against the CA alone (no
/// system roots; a server with `client_certificates::none` verifies no client). Loading checks,
/// each failure an input_error naming the file: every file readable and PEM; the key matches the
/// certificate; the certificate chains to the CA, is valid now, and names `node`.
class tls_context {
public:
  tls_context(const tls_files& files, const std::string& node,
              client_certificates clients = client_certificates::required);
  /// A token-only job's context, for gates and tunnels alike: TLS 1.3 with the token's PSK
  /// (TLS_AES_256_GCM_SHA384), always with an (EC)DHE key exchange (SSL_OP_ALLOW_NO_DHE_KEX
  /// stays unset: forward secrecy), and no certificate anywhere. A client whose server
  /// shows a certificate instead fails to verify it (an empty trust store).
  explicit tls_context(const std::string& token);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  ssl_ctx_st* native() const { return ctx_; }
  const std::string& node() const { return node_; }
  /// Whether this is a token-only (PSK) context.
  bool psk() const { return !keys_.identity.empty(); }
  /// Whether a server of this context verifies its clients (their certificate or the PSK).
  bool verifies_clients() const { return verifies_clients_; }
  const token_keys& keys() const { return keys_; }

private:
  ssl_ctx_st* ctx_ = nullptr;
  std::string node_;
  token_keys keys_; ///< a PSK context's
  bool verifies_clients_ = true;
};

/// What a server saw of a client's PSK identities: a tls_stream sets one per connection as
/// its SSL's app data, and the PSK callbacks fill it in.
struct psk_seen {
  bool offered = false; ///< the client named at least one PSK identity
  bool matched = false; ///< one of them was this job's
};

/// Why the peer of a finished handshake is refused, or "" when it is accepted: its
/// certificate must have chained to the CA (OpenSSL checked it during the handshake), have
/// the key usage of its side (serverAuth for a server, clientAuth for a client), and
/// name `expected` (a tunnel knows whom it dialled), or, with `expected` empty, name one
/// of `allowed` (a gate accepts any node of the job).
std::string check_peer(ssl_st* ssl, const std::string& expected,
                       const std::vector<std::string>& allowed);

/// The first error in this thread's OpenSSL error queue as text ("tlsv1 alert unknown
/// ca"), or `otherwise`; the queue is cleared.
std::string tls_error_text(const std::string& otherwise);

} // namespace deepcee::transport
