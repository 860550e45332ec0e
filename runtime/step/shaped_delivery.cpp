#include "runtime/step/shaped_delivery.hpp"

#include <cmath>
#include <fstream>
#include <limits>

namespace deepcee::runtime {

shaping_side shaping_side_of(std::string_view sender_boot, std::string_view receiver_boot) {
  return !sender_boot.empty() && sender_boot == receiver_boot ? shaping_side::hold_at_receiver
                                                              : shaping_side::wait_at_sender;
}

shaping_side shaping_side_of(bool one_process, std::string_view sender_boot,
                             std::string_view receiver_boot) {
  return one_process ? shaping_side::hold_at_receiver : shaping_side_of(sender_boot, receiver_boot);
}

std::string read_boot_id(const std::string& path) {
  std::ifstream in(path);
  std::string id;
  if (!in || !std::getline(in, id))
    return {};
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ' || id.back() == '\r'))
    id.pop_back();
  return id;
}

double transfer_bound_s(const transfer_part& part, double bytes) {
  double latency = 0, bandwidth = std::numeric_limits<double>::infinity();
  for (const auto& piece : part.history) {
    latency = std::max(latency, piece.params.latency_s);
    const double worst = piece.params.bandwidth_Bps * (1.0 - std::clamp(piece.jitter, 0.0, 1.0));
    if (worst > 0)
      bandwidth = std::min(bandwidth, worst);
  }
  if (part.history.empty() || !std::isfinite(bandwidth))
    return latency;
  return latency + bytes / bandwidth;
}

double hold_limit_s(const virtual_cluster& vc, const plan& p) {
  int micro_batches = 0; // of the whole job: a rebalance may give them all to one pipeline
  for (const auto& pipe : p.pipelines)
    micro_batches += pipe.micro_batches;
  const auto& layers = vc.model().layers;
  double step_s = 0;
  for (size_t q = 0; q < p.pipelines.size(); ++q) {
    const auto& stages = p.pipelines[q].stages;
    for (size_t s = 0; s < stages.size(); ++s) {
      const auto& vs = vc.stage(static_cast<int>(q), static_cast<int>(s));
      for (const auto* parts : {&vs.act_parts, &vs.grad_parts})
        for (const auto& part : *parts)
          step_s += micro_batches * transfer_bound_s(part, part.bytes);
      double gradient_bytes = 0;
      for (int l = stages[s].first_layer; l < stages[s].last_layer; ++l)
        gradient_bytes += static_cast<double>(layers.at(static_cast<size_t>(l)).grad_bytes);
      // A ring of n sends 2 (n - 1) / n of the gradients on each hop.
      for (const auto& hop : vs.ring_parts)
        step_s += transfer_bound_s(hop, 2 * gradient_bytes);
      for (const auto& [stage, share] : vs.share_parts)
        step_s += transfer_bound_s(share, gradient_bytes);
    }
  }
  return 2 * step_s;
}

int64_t release_at_ns(int64_t now_ns, int64_t deliver_at_ns, double limit_s) {
  if (deliver_at_ns <= now_ns)
    return now_ns;
  const double limit_ns = std::max(0.0, limit_s) * 1e9;
  if (static_cast<double>(deliver_at_ns - now_ns) > limit_ns)
    return now_ns + static_cast<int64_t>(limit_ns);
  return deliver_at_ns;
}

} // namespace deepcee::runtime
