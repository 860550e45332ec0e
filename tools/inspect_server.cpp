#include "tools/inspect_server.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_snapshot_json.hpp"
#include "runtime/watch/prometheus_text.hpp"
#include "tools/bounded_http.hpp"
#include "tools/http_head.hpp"
#include "tools/web_assets.hpp"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <vector>

namespace deepcee::tools {

namespace {

/// Host names compare without case.
std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// This host's name, as gethostname gives it ("" when it cannot).
std::string this_host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

/// Equal strings, in a time that depends on their lengths only.
bool same_secret(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0u;
    const auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0u;
    diff |= x ^ y;
  }
  return diff == 0;
}

void plain(httplib::Response& res, int status, const std::string& line) {
  res.status = status;
  res.set_content(line + "\n", "text/plain");
}

} // namespace

std::string inspect_address::text() const {
  return host + ":" + std::to_string(port);
}

std::optional<inspect_address> parse_inspect_address(std::string_view text,
                                                     const std::string& source) {
  if (text == "off")
    return std::nullopt;
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    throw runtime::input_error(source + ": \"" + std::string(text) + "\" is not HOST:PORT or off");
  const auto port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535)
    throw runtime::input_error(source + ": port \"" + std::string(port_text) +
                               "\" is not a number from 0 to 65535");
  return inspect_address{std::string(text.substr(0, colon)), static_cast<uint16_t>(port)};
}

struct inspect_server::impl {
  snapshot_board& board;
  const std::string credential;
  std::vector<std::string> host_names;
  std::set<std::string> hosts; ///< the names a Host header may say, lowercase (start fills it)
  http_routes http;
  bounded_http acceptor;
  std::atomic<bool> stopping{false};
  bool started = false;

  impl(snapshot_board& b, inspect_settings s)
      : board(b), credential(std::move(s.credential)), host_names(std::move(s.host_names)),
        acceptor(http, bounded_http_settings{.log = std::move(s.log), .tls = std::move(s.tls)}) {}

  using handler = void (impl::*)(const httplib::Request&, httplib::Response&);
  struct route {
    const char* path;
    handler serve;
    /// Served without the token: the page and its scripts hold nothing of the job (a
    /// browser cannot send a header when it opens a page; the page sends the token itself).
    bool open = false;
  };
  /// Every route of the endpoint (GET only: it reads).
  static const std::vector<route>& routes() {
    static const std::vector<route> table{
        {"/api/snapshot", &impl::snapshot},
        {"/api/stream", &impl::stream},
        {"/api/history", &impl::history},
        {"/metrics", &impl::metrics},
        {"/", &impl::page, true},
        {"/static/inspect_page.js", &impl::page_script, true},
        {"/static/chart.min.js", &impl::chart_script, true},
    };
    return table;
  }
  static const route* route_of(const std::string& path) {
    for (const auto& r : routes())
      if (path == r.path)
        return &r;
    return nullptr;
  }

  bool authorized(const httplib::Request& req) const {
    if (credential.empty())
      return true;
    const auto header = req.get_header_value("Authorization");
    constexpr std::string_view scheme = "Bearer ";
    return header.size() > scheme.size() && header.compare(0, scheme.size(), scheme) == 0 &&
           same_secret(std::string_view(header).substr(scheme.size()), credential);
  }

  /// A request without Host (not a browser's) is left to the credential.
  bool host_allowed(const httplib::Request& req) const {
    return !req.has_header("Host") || host_header_allowed(req.get_header_value("Host"), hosts);
  }

  /// The names this endpoint answers to at `at`: the address it binds, the node's names,
  /// this host's name, and localhost.
  void allow_hosts(const inspect_address& at) {
    std::vector<std::string> names = host_names;
    names.insert(names.end(), {at.host, this_host_name(), "localhost"});
    for (const auto& name : names)
      hosts.insert(lowercase(name));
  }

  /// The latest snapshot, with the frames dropped so far, as `render` writes it; 503 before
  /// the first.
  template <class Render>
  void serve_latest(httplib::Response& res, Render render, const char* type) {
    const auto latest = board.latest();
    if (!latest)
      return plain(res, 503, "no snapshot yet: the job has not started");
    auto s = *latest;
    s.dropped_frames = board.dropped_frames();
    res.set_header("Cache-Control", "no-store");
    res.set_content(render(s), type);
  }

  void snapshot(const httplib::Request&, httplib::Response& res) {
    serve_latest(
        res, [](const auto& s) { return runtime::job_snapshot_to_json(s) + "\n"; },
        "application/json");
  }

  /// The whole run's figures by step (run_history), for a page opened late.
  void history(const httplib::Request&, httplib::Response& res) {
    serve_latest(
        res, [](const auto& s) { return runtime::run_history_to_json(s.history.get()) + "\n"; },
        "application/json");
  }

  void metrics(const httplib::Request&, httplib::Response& res) {
    serve_latest(
        res, [](const auto& s) { return runtime::job_snapshot_to_prometheus(s); },
        "text/plain; version=0.0.4; charset=utf-8");
  }

  static void asset(httplib::Response& res, std::string_view body, const char* type) {
    res.set_header("Cache-Control", "no-cache");
    // The browser loads and fetches from this node only (the page's own <style> aside).
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_content(body.data(), body.size(), type);
  }
  void page(const httplib::Request&, httplib::Response& res) {
    asset(res, web_assets::page_html, "text/html; charset=utf-8");
  }
  void page_script(const httplib::Request&, httplib::Response& res) {
    asset(res, web_assets::page_js, "text/javascript; charset=utf-8");
  }
  void chart_script(const httplib::Request&, httplib::Response& res) {
    asset(res, web_assets::chart_js, "text/javascript; charset=utf-8");
  }

  void stream(const httplib::Request&, httplib::Response& res) {
    auto sub = board.subscribe(stream_queue);
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "application/x-ndjson",
        [this, sub](size_t, httplib::DataSink& sink) {
          const auto f = sub->next(std::chrono::milliseconds(250));
          if (stopping || sub->closed())
            return false;
          if (!f)
            return true; // nothing new yet: asked again
          auto s = *f;
          s.dropped_frames = sub->dropped();
          const auto line = runtime::job_snapshot_to_json(s) + "\n";
          return sink.write(line.data(), line.size());
        },
        [this, sub](bool) { board.unsubscribe(sub); });
  }

  void configure() {
    http.set_payload_max_length(4096); // GETs carry no body (and bounded_http reads none)
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const auto* r = route_of(req.path);
      if (r && req.method != "GET" && req.method != "HEAD") {
        res.set_header("Allow", "GET, HEAD");
        plain(res, 405, "method " + req.method + " not allowed: the endpoint only reads");
        return httplib::Server::HandlerResponse::Handled;
      }
      // GETs carry no body, and one that claims a body would leave it to be read as the
      // connection's next request.
      if (req.has_header("Transfer-Encoding") ||
          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0")) {
        res.set_header("Connection", "close");
        plain(res, 400, "a request to this endpoint carries no body");
        return httplib::Server::HandlerResponse::Handled;
      }
      const auto peer = [&req] { return req.remote_addr + ":" + std::to_string(req.remote_port); };
      if (!host_allowed(req)) {
        acceptor.refuse_request(peer(), "its Host header names another host than this endpoint");
        plain(res, 403, "forbidden: the Host header names another host than this node");
        return httplib::Server::HandlerResponse::Handled;
      }
      if ((r && r->open) || authorized(req))
        return httplib::Server::HandlerResponse::Unhandled;
      acceptor.refuse_request(peer(), "it sent no valid watch credential");
      res.set_header("WWW-Authenticate", "Bearer");
      plain(res, 401,
            "unauthorized: this job's endpoint needs its watch credential (Authorization: "
            "Bearer)");
      return httplib::Server::HandlerResponse::Handled;
    });
    for (const auto& r : routes())
      http.Get(r.path,
               [this, serve = r.serve](const httplib::Request& req, httplib::Response& res) {
                 (this->*serve)(req, res);
               });
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty())
        plain(res, res.status, "error " + std::to_string(res.status));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                  std::exception_ptr) { plain(res, 500, "internal error"); });
  }
};

inspect_server::inspect_server(snapshot_board& board, inspect_settings settings)
    : impl_(std::make_unique<impl>(board, std::move(settings))) {
  impl_->configure();
}

inspect_server::~inspect_server() {
  stop();
}

uint16_t inspect_server::start(const inspect_address& at) {
  uint16_t port = 0;
  try {
    port = impl_->acceptor.start(at.host, at.port);
  } catch (const std::runtime_error&) {
    throw std::runtime_error("inspect: cannot listen on " + at.text() +
                             " (in use, or not an address of this machine)");
  }
  impl_->started = true;
  impl_->allow_hosts(at);
  return port;
}

void inspect_server::stop() {
  if (!impl_->started)
    return;
  impl_->started = false;
  impl_->stopping = true;
  impl_->board.close();
  impl_->acceptor.stop();
}

} // namespace deepcee::tools
