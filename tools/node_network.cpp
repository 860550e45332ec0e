#include "tools/node_network.hpp"

#include "tools/node_process.hpp"

#include <cstdio>

namespace deepcee::tools {

namespace {

runtime::gate::endpoint public_endpoint(const runtime::node& n) {
  return {host_of(n), static_cast<uint16_t>(n.port)};
}

/// The gate's settings: refusals logged as one line each, naming the node; never the token.
runtime::gate::gate_settings settings(const std::string& token, const std::string& node) {
  runtime::gate::gate_settings s;
  s.token = token;
  s.log = [node](const std::string& line) {
    std::fprintf(stderr, "node %s: %s\n", node.c_str(), line.c_str());
  };
  return s;
}

} // namespace

node_network::node_network(const runtime::job_config& job, int me, std::optional<std::string> token)
    : job_(job), me_(me), token_(std::move(token)) {
  if (!token_)
    return;
  const auto& nodes = job.cluster.nodes;
  for (int n = 0; n < static_cast<int>(nodes.size()); ++n)
    if (n != me) {
      // A tunnel's refusal is the caller's one line (refusal()), so it logs nothing itself.
      auto s = settings(*token_, nodes[size_t(me)].name);
      s.log = nullptr;
      tunnels_[n] = std::make_unique<runtime::gate::tunnel>(std::move(s), nodes[size_t(n)].name,
                                                            public_endpoint(nodes[size_t(n)]));
    }
}

runtime::gate::endpoint node_network::caf_listen() const {
  if (!secure())
    return public_endpoint(job_.cluster.nodes[size_t(me_)]);
  return {"127.0.0.1", 0};
}

void node_network::open_gate(uint16_t caf_port) {
  if (!secure())
    return;
  const auto& me = job_.cluster.nodes[size_t(me_)];
  gate_ = std::make_unique<runtime::gate::gate>(settings(*token_, me.name), public_endpoint(me),
                                                caf_port);
}

runtime::gate::endpoint node_network::reach(int n) const {
  if (!secure())
    return public_endpoint(job_.cluster.nodes[size_t(n)]);
  return {"127.0.0.1", tunnels_.at(n)->local_port()};
}

std::string node_network::refusal(int n) const {
  if (!secure())
    return {};
  return tunnels_.at(n)->refusal();
}

} // namespace deepcee::tools
