#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using ssl_ctx_st = struct ssl_ctx_st;
using ssl_st = struct ssl_st;
using x509_st = struct x509_st;

/// A node's TLS identity: its certificate and key, and the job's CA that every peer's
/// certificate must chain to. A node is named by its certificate: the subject's CN or a DNS
/// entry of its subjectAltName equals the node's name in the job, so the certificate of n1
/// cannot serve as n0's.
namespace deepcee::transport {

struct tls_files {
  std::filesystem::path certificate;
  std::filesystem::path key;
  std::filesystem::path ca;
};

/// The names a certificate gives its subject: every DNS subjectAltName, then the CN (once).
std::vector<std::string> certificate_names(x509_st* cert);

/// Whether `names` (certificate_names) name `node`, exactly (no wildcards, no case folding:
/// node names are identifiers, not host names).
bool names_node(const std::vector<std::string>& names, const std::string& node);

/// "n1" or "n1, n1.example" or "no name": for a refusal line.
std::string names_text(const std::vector<std::string>& names);

/// An OpenSSL context for TLS 1.3 only, with mutual verification against the CA alone (no
/// system roots). Loading checks, each failure an input_error naming the file: every file
/// readable and PEM; the key matches the certificate; the certificate chains to the CA, is
/// valid now, and names `node`.
class tls_context {
public:
  tls_context(const tls_files& files, const std::string& node);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  ssl_ctx_st* native() const { return ctx_; }
  const std::string& node() const { return node_; }

private:
  ssl_ctx_st* ctx_ = nullptr;
  std::string node_;
};

/// Why the peer of a finished handshake is refused, or "" when it is accepted: its
/// certificate must have chained to the CA (OpenSSL checked it during the handshake) and
/// name `expected` (a tunnel knows whom it dialled), or, with `expected` empty, name one
/// of `allowed` (a gate accepts any node of the job).
std::string check_peer(ssl_st* ssl, const std::string& expected,
                       const std::vector<std::string>& allowed);

/// The first error in this thread's OpenSSL error queue as text ("tlsv1 alert unknown
/// ca"), or `otherwise`; the queue is cleared.
std::string tls_error_text(const std::string& otherwise);

} // namespace deepcee::transport
