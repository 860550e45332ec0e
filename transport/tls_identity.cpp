#include "transport/tls_identity.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/secrets.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

namespace deepcee::transport {

namespace fs = std::filesystem;

namespace {

struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct store_ctx_free {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
using x509_ptr = std::unique_ptr<X509, x509_free>;

/// Never prompts for a pass phrase: a node starts unattended, so an encrypted key is bad input.
int no_pass_phrase(char*, int, int, void*) {
  return -1;
}

std::unique_ptr<BIO, bio_free> open_file(const fs::path& file, const std::string& what) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    runtime::fail_input(file, 0, "the " + what + " is missing or not a regular file");
  std::unique_ptr<BIO, bio_free> bio(BIO_new_file(file.c_str(), "r"));
  if (!bio)
    runtime::fail_input(file, 0,
                        "cannot read the " + what + " (" + tls_error_text("unreadable") + ")");
  return bio;
}

x509_ptr read_certificate(const fs::path& file, const std::string& what) {
  auto bio = open_file(file, what);
  x509_ptr cert(PEM_read_bio_X509(bio.get(), nullptr, no_pass_phrase, nullptr));
  if (!cert)
    runtime::fail_input(file, 0,
                        "the " + what + " is not a PEM certificate (" +
                            tls_error_text("no certificate") + ")");
  return cert;
}

std::string text_of(const ASN1_STRING* s) {
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0)
    return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

SSL_CTX* new_tls13_context();

} // namespace

std::vector<std::string> certificate_names(X509* cert) {
  std::vector<std::string> names;
  if (auto* sans = static_cast<GENERAL_NAMES*>(
          X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS)
        names.push_back(text_of(g->d.dNSName));
    }
    GENERAL_NAMES_free(sans);
  }
  if (!names.empty()) // RFC 6125 6.4.4: the CN counts only where no DNS name is given
    return names;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;)
    if (auto cn = text_of(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)));
        std::find(names.begin(), names.end(), cn) == names.end())
      names.push_back(std::move(cn));
  return names;
}

bool names_node(const std::vector<std::string>& names, const std::string& node) {
  return !node.empty() && std::find(names.begin(), names.end(), node) != names.end();
}

std::string missing_usage(X509* cert, bool server, bool client) {
  const bool has_eku = (X509_get_extension_flags(cert) & EXFLAG_XKUSAGE) != 0;
  const uint32_t eku = has_eku ? X509_get_extended_key_usage(cert) : 0;
  std::string missing;
  if (server && !(eku & XKU_SSL_SERVER))
    missing = "serverAuth";
  if (client && !(eku & XKU_SSL_CLIENT))
    missing += std::string(missing.empty() ? "" : " and ") + "clientAuth";
  return missing;
}

std::string names_text(const std::vector<std::string>& names) {
  if (names.empty())
    return "no name";
  std::string s;
  for (const auto& n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string tls_error_text(const std::string& otherwise) {
  const unsigned long e = ERR_peek_error();
  std::string out = otherwise;
  if (e != 0) {
    if (const char* reason = ERR_reason_error_string(e))
      out = reason;
  }
  ERR_clear_error();
  return out;
}

tls_context::tls_context(const tls_files& files, const std::string& node,
                         client_certificates clients)
    : node_(node), verifies_clients_(clients == client_certificates::required) {
  ERR_clear_error();
  auto cert = read_certificate(files.certificate, "certificate");
  auto ca = read_certificate(files.ca, "CA certificate");
  std::unique_ptr<EVP_PKEY, pkey_free> key;
  {
    auto bio = open_file(files.key, "private key");
    runtime::require_private_file(files.key, "private key");
    key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_pass_phrase, nullptr));
    if (!key)
      runtime::fail_input(files.key, 0,
                          "the private key is not an unencrypted PEM key (" +
                              tls_error_text("no key") + ")");
  }
  ctx_ = new_tls13_context();
  // Both sides show a certificate. No PSK callbacks here: a server that had them would let a
  // client with a PSK skip its certificate.
  SSL_CTX_set_verify(
      ctx_, verifies_clients_ ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_NONE,
      nullptr);
  if (SSL_CTX_load_verify_locations(ctx_, files.ca.c_str(), nullptr) != 1)
    runtime::fail_input(files.ca, 0,
                        "cannot load the CA certificate (" + tls_error_text("?") + ")");
  if (SSL_CTX_use_certificate(ctx_, cert.get()) != 1)
    runtime::fail_input(files.certificate, 0,
                        "cannot use the certificate (" + tls_error_text("?") + ")");
  if (SSL_CTX_use_PrivateKey(ctx_, key.get()) != 1 || SSL_CTX_check_private_key(ctx_) != 1)
    runtime::fail_input(files.key, 0,
                        "the private key does not belong to the certificate " +
                            files.certificate.string() + " (" + tls_error_text("mismatch") + ")");
  std::unique_ptr<X509_STORE_CTX, store_ctx_free> check(X509_STORE_CTX_new());
  X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(ctx_), cert.get(), nullptr);
  if (X509_verify_cert(check.get()) != 1)
    runtime::fail_input(
        files.certificate, 0,
        std::string("the certificate does not chain to the CA in ") + files.ca.string() + " (" +
            X509_verify_cert_error_string(X509_STORE_CTX_get_error(check.get())) + ")");
  if (const auto names = certificate_names(cert.get()); !names_node(names, node))
    runtime::fail_input(files.certificate, 0,
                        "the certificate names " + names_text(names) + ", not node " + node +
                            " (a DNS subjectAltName, or the CN where it has none, must be the "
                            "node's name)");
  // A node's certificate serves its gate and its tunnels alike.
  if (const auto missing = missing_usage(cert.get(), true, true); !missing.empty())
    runtime::fail_input(files.certificate, 0,
                        "the certificate lacks the extended key usage " + missing +
                            " (a node's needs both serverAuth and clientAuth)");
  ERR_clear_error();
}

namespace {

/// The session context of the PSK's sessions and of every SSL that uses them.
constexpr unsigned char psk_context_id[] = "deepcee psk";

/// A TLS 1.3 session that carries the PSK, as OpenSSL's external PSK callbacks want it.
SSL_SESSION* psk_session(SSL* ssl, const token_keys& keys) {
  static constexpr unsigned char aes256_gcm_sha384[] = {0x13, 0x02};
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, aes256_gcm_sha384);
  SSL_SESSION* s = SSL_SESSION_new();
  if (!s || !cipher || !SSL_SESSION_set1_master_key(s, keys.psk.data(), keys.psk.size()) ||
      !SSL_SESSION_set_cipher(s, cipher) || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) ||
      !SSL_SESSION_set1_id_context(s, psk_context_id, sizeof psk_context_id - 1)) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

const token_keys& keys_of(SSL* ssl) {
  return static_cast<const tls_context*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)))->keys();
}

/// The client's side: offers the job's identity (when the hash the server chose fits it).
int use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* id_len,
            SSL_SESSION** session) {
  *session = nullptr;
  *id = nullptr;
  *id_len = 0;
  SSL_SESSION* s = psk_session(ssl, keys_of(ssl));
  if (!s)
    return 0;
  if (md && SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s)) != md) {
    SSL_SESSION_free(s);
    return 1;
  }
  const auto& identity = keys_of(ssl).identity;
  *id = reinterpret_cast<const unsigned char*>(identity.data());
  *id_len = identity.size();
  *session = s;
  return 1;
}

/// The server's side: the job's identity gets the PSK, any other none (the handshake then
/// fails: the server has no certificate to fall back on).
int find_psk(SSL* ssl, const unsigned char* id, size_t id_len, SSL_SESSION** session) {
  *session = nullptr;
  const auto& identity = keys_of(ssl).identity;
  auto* seen = static_cast<psk_seen*>(SSL_get_app_data(ssl));
  if (seen)
    seen->offered = true;
  if (!same_bytes({id, id_len},
                  {reinterpret_cast<const uint8_t*>(identity.data()), identity.size()}))
    return 1;
  *session = psk_session(ssl, keys_of(ssl));
  if (seen && *session)
    seen->matched = true;
  return *session ? 1 : 0;
}

/// TLS 1.3 only, no resumption or tickets: what both kinds of context share.
SSL_CTX* new_tls13_context() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (!ctx)
    throw std::runtime_error("OpenSSL cannot make a TLS context: " + tls_error_text("?"));
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_clear_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  // The most a peer's certificate chain may take before it is verified.
  SSL_CTX_set_max_cert_list(ctx, 32 * 1024);
  // One recv() per burst of records, not two per record (header, then body); tls_stream
  // asks SSL_has_pending before it waits on the socket.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_passwd_cb(ctx, no_pass_phrase);
  return ctx;
}

} // namespace

tls_context::tls_context(const std::string& token) : keys_(derive_token_keys(token)) {
  ERR_clear_error();
  ctx_ = new_tls13_context();
  SSL_CTX_set_app_data(ctx_, this);
  if (SSL_CTX_set_ciphersuites(ctx_, "TLS_AES_256_GCM_SHA384") != 1)
    throw std::runtime_error("OpenSSL lacks TLS_AES_256_GCM_SHA384: " + tls_error_text("?"));
  // A certificate, should a server show one, verifies against nothing: a PSK client never
  // takes a server without the token for one.
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  // A server that verifies peers takes a PSK (a resumption, to OpenSSL) only in a named
  // session context.
  SSL_CTX_set_session_id_context(ctx_, psk_context_id, sizeof psk_context_id - 1);
  SSL_CTX_set_psk_use_session_callback(ctx_, use_psk);
  SSL_CTX_set_psk_find_session_callback(ctx_, find_psk);
}

tls_context::~tls_context() {
  SSL_CTX_free(ctx_);
}

std::string check_peer(SSL* ssl, const std::string& expected,
                       const std::vector<std::string>& allowed) {
  if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK)
    return std::string("its certificate does not chain to the job's CA (") +
           X509_verify_cert_error_string(v) + ")";
  x509_ptr cert(SSL_get1_peer_certificate(ssl));
  if (!cert)
    return "it presented no certificate";
  // A tunnel (expecting a node) checks a server's certificate, a gate a client's.
  if (const auto missing = missing_usage(cert.get(), !expected.empty(), expected.empty());
      !missing.empty())
    return "its certificate lacks the extended key usage " + missing;
  const auto names = certificate_names(cert.get());
  if (!expected.empty()) {
    if (!names_node(names, expected))
      return "its certificate names " + names_text(names) + ", not node " + expected;
    return {};
  }
  for (const auto& n : allowed)
    if (names_node(names, n))
      return {};
  return "its certificate names " + names_text(names) + ", no node of the job";
}

} // namespace deepcee::transport
