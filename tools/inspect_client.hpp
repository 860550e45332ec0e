#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

/// `deepcee inspect`'s side of the inspection endpoint (tools/inspect_server.hpp).
namespace deepcee::tools {

/// The endpoint cannot be used: nothing listens, the token is refused, the reply is broken.
/// The message is one line naming the address.
struct inspect_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class inspect_client {
public:
  /// `address`: HOST:PORT, http://HOST:PORT or https://HOST:PORT (an input_error otherwise);
  /// `token` empty for none. `ca`: the job's CA certificate: HTTPS, the endpoint's
  /// certificate checked against it (an https:// address without it is an input_error).
  inspect_client(const std::string& address, std::string token,
                 const std::optional<std::filesystem::path>& ca = std::nullopt);
  ~inspect_client();

  /// "http://HOST:PORT" or "https://HOST:PORT".
  const std::string& url() const { return url_; }

  /// The latest snapshot (GET /api/snapshot).
  runtime::job_snapshot snapshot();

  /// Follows /api/stream: `line` gets each snapshot's JSON line, checked, and its snapshot,
  /// until the endpoint closes it (the job ended: returns) or `line` returns false. Throws
  /// inspect_failed when it cannot follow it.
  void stream(const std::function<bool(const std::string&, runtime::job_snapshot)>& line);

  /// Ends a stream() waiting in another thread.
  void stop();

private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string url_;
  std::string token_;
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepcee::tools
