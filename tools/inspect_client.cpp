#include "tools/inspect_client.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_snapshot_json.hpp"
#include "transport/tls_identity.hpp"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <charconv>

namespace deepcee::tools {

namespace {

struct host_port {
  std::string host;
  int port = 0;
  bool https = false; ///< the address said https://
};

host_port parse_address(std::string text) {
  const bool https = text.starts_with("https://");
  if (https)
    text = text.substr(8);
  else if (text.starts_with("http://"))
    text = text.substr(7);
  while (!text.empty() && text.back() == '/')
    text.pop_back();
  const auto colon = text.rfind(':');
  int port = 0;
  if (colon != std::string::npos && colon > 0) {
    const auto digits = std::string_view(text).substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec == std::errc{} && end == digits.data() + digits.size() && port > 0 && port <= 65535)
      return {text.substr(0, colon), port, https};
  }
  throw runtime::input_error("ADDR: \"" + text +
                             "\" is not HOST:PORT (the address `deepcee run` printed after "
                             "`inspect: http://`)");
}

std::string error_text(httplib::Error e) {
  switch (e) {
  case httplib::Error::Connection:
    return "nothing answers there (connection refused or unreachable); is the job running?";
  case httplib::Error::ConnectionTimeout:
    return "no answer within 3 s (nothing reachable listens there)";
  case httplib::Error::Read:
    return "the connection broke while reading its reply (an HTTPS endpoint? give the job's "
           "CA with --ca)";
  case httplib::Error::SSLConnection:
  case httplib::Error::SSLServerVerification:
    return "the TLS handshake failed (" + transport::tls_error_text("not an HTTPS endpoint") +
           "): its certificate must chain to the CA given with --ca";
  default:
    return httplib::to_string(e);
  }
}

/// HTTPS to a node of the job: TLS 1.3, the server's certificate verified against the job's
/// CA alone (no system roots) and made for a server (serverAuth). Its name is not compared
/// with the address: a node's certificate names the node, not its address, and the job's CA
/// signs only the job's nodes (one CA per job, security.md).
void trust_only(SSL_CTX* ctx, const std::filesystem::path& ca) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(ca, ec))
    runtime::fail_input(ca, 0, "the CA certificate is missing or not a regular file");
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1)
    runtime::fail_input(ca, 0,
                        "cannot load the CA certificate (" + transport::tls_error_text("?") + ")");
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
}

} // namespace

struct inspect_client::impl {
  std::unique_ptr<httplib::ClientImpl> http;
  impl(const std::string& host, int port, const std::optional<std::filesystem::path>& ca) {
    if (ca) {
      auto tls = std::make_unique<httplib::SSLClient>(host, port);
      // httplib's own check compares the name with the address; trust_only's replaces it.
      tls->enable_server_certificate_verification(false);
      trust_only(tls->ssl_context(), *ca);
      http = std::move(tls);
    } else {
      http = std::make_unique<httplib::ClientImpl>(host, port);
    }
    http->set_connection_timeout(3, 0);
    http->set_read_timeout(10, 0); // a stream sends at least one frame per step
    http->set_write_timeout(3, 0);
    http->set_keep_alive(false);
  }
};

inspect_client::inspect_client(const std::string& address, std::string token,
                               const std::optional<std::filesystem::path>& ca)
    : token_(std::move(token)) {
  const auto at = parse_address(address);
  if (at.https && !ca)
    throw runtime::input_error("ADDR: \"" + address +
                               "\" is HTTPS: give the job's CA certificate with --ca FILE");
  url_ = std::string(ca ? "https://" : "http://") + at.host + ":" + std::to_string(at.port);
  impl_ = std::make_unique<impl>(at.host, at.port, ca);
  if (!token_.empty())
    impl_->http->set_bearer_token_auth(token_);
}

inspect_client::~inspect_client() = default;

void inspect_client::fail(const std::string& what) const {
  throw inspect_failed(url_ + ": " + what);
}

namespace {

/// The one line a refusal says: the status and the first line of its body.
std::string refusal(int status, const std::string& body) {
  if (status == 401)
    return "the endpoint refused the credential (401 unauthorized): give the job's token or "
           "its watch credential with --token-file or DEEPCEE_TOKEN";
  auto first = body.substr(0, body.find('\n')).substr(0, 200);
  return "HTTP " + std::to_string(status) + (first.empty() ? "" : ": " + first);
}

} // namespace

runtime::job_snapshot inspect_client::snapshot() {
  const auto res = impl_->http->Get("/api/snapshot");
  if (!res)
    fail(error_text(res.error()));
  if (res->status != 200)
    fail(refusal(res->status, res->body));
  try {
    return runtime::job_snapshot_from_json(res->body, "its reply");
  } catch (const runtime::input_error& e) {
    fail(std::string("broken reply: ") + e.what());
  }
}

void inspect_client::stream(
    const std::function<bool(const std::string&, runtime::job_snapshot)>& line) {
  std::string pending, failure;
  int status = 0;
  std::string body;
  bool stopped_by_caller = false;
  const auto res = impl_->http->Get(
      "/api/stream",
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status != 200) {
          body.append(data, std::min(n, size_t(4096) - std::min(body.size(), size_t(4096))));
          return true;
        }
        pending.append(data, n);
        if (pending.size() > runtime::max_snapshot_bytes) {
          failure = "broken reply: a line longer than " +
                    std::to_string(runtime::max_snapshot_bytes) + " bytes";
          return false;
        }
        for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
          const auto text = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          runtime::job_snapshot s;
          try {
            s = runtime::job_snapshot_from_json(text, "its stream");
          } catch (const runtime::input_error& e) {
            failure = std::string("broken reply: ") + e.what();
            return false;
          }
          if (!line(text, std::move(s))) {
            stopped_by_caller = true;
            return false;
          }
        }
        return true;
      });
  if (!failure.empty())
    fail(failure);
  if (stopped_by_caller)
    return;
  if (status != 0 && status != 200)
    fail(refusal(status, body));
  if (!res && res.error() != httplib::Error::Canceled && status == 0)
    fail(error_text(res.error()));
  // Otherwise the endpoint closed the stream: the job ended.
}

void inspect_client::stop() {
  impl_->http->stop();
}

} // namespace deepcee::tools
