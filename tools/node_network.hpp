#pragma once

#include "runtime/io/job_token.hpp"
#include "runtime/plan/job_config.hpp"
#include "transport/gate.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

/// How a node of `deepcee node` is reached and reaches its peers. With the job's token
/// (the default), a gate of ours owns the node's public port and CAF's middleman listens
/// only on 127.0.0.1; CAF reaches each peer through a tunnel to that peer's gate
/// (transport/gate.hpp). Where the job file names certificates ([security] ca, ...),
/// gates and tunnels speak TLS 1.3 and check each peer's certificate against the job's CA
/// and its node's name. With --insecure, CAF listens on the public port itself, as
/// before, and anyone who reaches it can talk to the job.
namespace deepcee::tools {

class node_network {
public:
  /// `token` empty: insecure. Opens a tunnel to every other node of the job. Throws
  /// input_error naming the file when the node's TLS identity cannot be used.
  node_network(const runtime::job_config& job, int me, std::optional<std::string> token);

  bool secure() const { return token_.has_value(); }
  /// The job's token (none with --insecure); never printed or logged.
  const std::optional<std::string>& token() const { return token_; }
  bool tls() const { return tls_ != nullptr; }
  /// inspect_tls for this node, null with --insecure.
  std::shared_ptr<const transport::tls_context> inspect_tls() const;
  /// With a token: opens the gate on the node's public port in front of `caf_port`, or
  /// throws std::runtime_error naming the port. Without one: nothing to do.
  void open_gate(uint16_t caf_port);
  /// Where CAF connects to reach node `n`.
  transport::endpoint reach(int n) const;
  /// Why node `n`'s gate failed to authenticate (with the address), or "".
  std::string refusal(int n) const;

private:
  const runtime::job_config& job_;
  int me_;
  std::optional<std::string> token_;
  std::shared_ptr<const transport::tls_context> tls_;
  std::map<int, std::unique_ptr<transport::tunnel>> tunnels_;
  std::unique_ptr<transport::gate> gate_;
};

/// Node `me`'s TLS identity (its certificate and key, the job's CA) when the job names
/// certificates, else null: the one rule by which `deepcee node`, `deepcee profile --name` and
/// `deepcee inject --name` present themselves to a job's gates. An input_error naming the
/// file that is missing, unreadable, expired, from another CA or for another node, or the
/// job's file when `insecure` is asked of a job with certificates.
std::shared_ptr<const transport::tls_context> node_tls(const runtime::job_config& job, int me,
                                                       bool insecure);

/// The inspection endpoint's HTTPS identity on a job with certificates: node `node`'s
/// certificate, asking clients for none (they prove the watch credential instead); null
/// without certificates. Throws input_error as node_tls does.
std::shared_ptr<const transport::tls_context> inspect_tls(const runtime::job_config& job, int node);

/// A node's token: `token_file` (--token-file), the job file's [security] token_file or the
/// environment (runtime::find_job_token); none with `insecure`. Neither: an input_error naming
/// the node and how to give one.
std::optional<std::string> node_token(const runtime::job_config& job, const std::string& node,
                                      const std::optional<std::string>& token_file, bool insecure,
                                      const runtime::token_environment& token_env);

} // namespace deepcee::tools
