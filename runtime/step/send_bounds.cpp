#include "runtime/step/send_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace deepcee::runtime {

send_bounds next_send_bounds(const stage_progress& p) {
  if (!p.ops)
    throw std::invalid_argument("next_send_bounds: no op list");
  auto readiness = p.readiness; // the walk marks the ops it passes as ended
  send_bounds out;
  bool activation_found = readiness.place().last, gradient_found = readiness.place().first;
  double t = p.free_at;
  for (size_t k = p.next_op; k < p.ops->size() && !(activation_found && gradient_found); ++k) {
    const auto op = (*p.ops)[k];
    const double duration = op.kind == op_kind::forward          ? p.f
                            : op.kind == op_kind::backward_input ? p.b
                                                                 : p.w;
    t = std::max(t, readiness.ready_at(op)) + duration;
    switch (readiness.op_ended(op, t)) {
    case tensor_flow::activation_to_next:
      if (!std::exchange(activation_found, true))
        out.activation = t;
      break;
    case tensor_flow::gradient_to_previous:
      if (!std::exchange(gradient_found, true))
        out.gradient = t;
      break;
    case tensor_flow::none:
      break;
    }
  }
  return out;
}

double min_transit(const std::vector<transfer_part>& parts) {
  double out = 0;
  for (const auto& part : parts) {
    if (part.history.empty())
      continue;
    double latency = never_s, bandwidth = 0;
    for (const auto& piece : part.history) {
      latency = std::min(latency, piece.params.latency_s);
      bandwidth = std::max(bandwidth, piece.params.bandwidth_Bps);
    }
    out = std::max(out, latency + part.bytes / bandwidth);
  }
  return out;
}

double arrival_bound(double send_s, double transit_s) {
  if (send_s == never_s)
    return send_s;
  if (send_s <= std::numeric_limits<double>::lowest())
    return unknown_s;
  const double bound = send_s + transit_s * (1.0 - 1e-9);
  return bound - 8 * std::numeric_limits<double>::epsilon() * std::abs(bound);
}

} // namespace deepcee::runtime
