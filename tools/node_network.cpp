#include "tools/node_network.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_token.hpp"
#include "tools/node_process.hpp"
#include "transport/tls_identity.hpp"

#include <cstdio>

namespace deepcee::tools {

namespace {

transport::endpoint public_endpoint(const runtime::node& n) {
  return {host_of(n), static_cast<uint16_t>(n.port)};
}

/// The gate's settings: refusals logged as one line each, naming the node; never the token.
transport::gate_settings settings(const runtime::job_config& job, const std::string& token,
                                  const std::string& node,
                                  std::shared_ptr<const transport::tls_context> tls) {
  transport::gate_settings s;
  s.token = token;
  s.tls = std::move(tls);
  s.first_bytes_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(job.first_bytes_timeout_s * 1e3));
  s.log = [node](const std::string& line) {
    std::fprintf(stderr, "node %s: %s\n", node.c_str(), line.c_str());
  };
  return s;
}

} // namespace

std::shared_ptr<const transport::tls_context> node_tls(const runtime::job_config& job, int me,
                                                       bool insecure) {
  if (!job.tls)
    return nullptr;
  const auto& name = job.cluster.nodes[size_t(me)].name;
  if (insecure)
    runtime::fail_input(job.source, 0,
                        "node " + name +
                            ": --insecure turns the gate off, but [security] names TLS "
                            "certificates; use the job's token");
  const auto files = job.tls->of(name);
  return std::make_shared<const transport::tls_context>(
      transport::tls_files{files.certificate, files.key, job.tls->ca}, name);
}

node_network::node_network(const runtime::job_config& job, int me, std::optional<std::string> token)
    : job_(job), me_(me), token_(std::move(token)), tls_(node_tls(job, me, !token_)) {
  if (!token_)
    return;
  const auto& nodes = job.cluster.nodes;
  for (int n = 0; n < static_cast<int>(nodes.size()); ++n)
    if (n != me) {
      // A tunnel's refusal is the caller's one line (refusal()), so it logs nothing itself.
      auto s = settings(job, *token_, nodes[size_t(me)].name, tls_);
      s.log = nullptr;
      tunnels_[n] = std::make_unique<transport::tunnel>(std::move(s), nodes[size_t(n)].name,
                                                        public_endpoint(nodes[size_t(n)]));
    }
}

std::shared_ptr<const transport::tls_context> inspect_tls(const runtime::job_config& job,
                                                          int node) {
  if (!job.tls)
    return nullptr;
  const auto& name = job.cluster.nodes[size_t(node)].name;
  const auto files = job.tls->of(name);
  return std::make_shared<const transport::tls_context>(
      transport::tls_files{files.certificate, files.key, job.tls->ca}, name,
      transport::client_certificates::none);
}

std::shared_ptr<const transport::tls_context> node_network::inspect_tls() const {
  return tls_ ? tools::inspect_tls(job_, me_) : nullptr;
}

void node_network::open_gate(uint16_t caf_port) {
  if (!secure())
    return;
  const auto& me = job_.cluster.nodes[size_t(me_)];
  auto s = settings(job_, *token_, me.name, tls_);
  // Every node of the job, this one too: `deepcee inject --name` on this node's host
  // presents this node's certificate.
  for (const auto& n : job_.cluster.nodes)
    s.peers.push_back(n.name);
  gate_ = std::make_unique<transport::gate>(std::move(s), public_endpoint(me), caf_port);
}

transport::endpoint node_network::reach(int n) const {
  if (!secure())
    return public_endpoint(job_.cluster.nodes[size_t(n)]);
  return {"127.0.0.1", tunnels_.at(n)->local_port()};
}

std::string node_network::refusal(int n) const {
  if (!secure())
    return {};
  return tunnels_.at(n)->refusal();
}

std::optional<std::string> node_token(const runtime::job_config& job, const std::string& node,
                                      const std::optional<std::string>& token_file, bool insecure,
                                      const runtime::token_environment& token_env) {
  if (insecure)
    return std::nullopt;
  auto token = runtime::find_job_token(token_file, job.token_file, token_env);
  if (!token)
    throw runtime::input_error(
        "node " + node +
        ": a multi-process job needs the job's token: --token-file FILE (or the environment's "
        "DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN; make one with `openssl rand -hex 32`), or "
        "--insecure to run without one");
  return token;
}

} // namespace deepcee::tools
