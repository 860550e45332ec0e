#include "runtime/send_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace deepcee::runtime {

send_bounds next_send_bounds(const stage_progress& p) {
  if (!p.ops)
    throw std::invalid_argument("next_send_bounds: no op list");
  send_bounds out;
  const bool sends_activations = !p.last;
  const bool sends_gradients = !p.first;
  bool activation_found = !sends_activations, gradient_found = !sends_gradients;
  auto f_end = p.f_end;
  auto b_end = p.b_end;
  double t = p.free_at;
  for (size_t k = p.next_op; k < p.ops->size() && !(activation_found && gradient_found); ++k) {
    const auto op = (*p.ops)[k];
    const auto i = static_cast<size_t>(op.micro);
    double ready = unknown_s;
    double duration = 0;
    switch (op.kind) {
    case op_kind::forward:
      ready = p.first ? unknown_s : p.activation_in.at(i);
      duration = p.f;
      break;
    case op_kind::backward_input:
      ready = p.last ? f_end.at(i) : p.gradient_in.at(i);
      duration = p.b;
      break;
    case op_kind::backward_weight:
      ready = b_end.at(i);
      duration = p.w;
      break;
    }
    const double end = std::max(t, ready) + duration;
    t = end;
    if (op.kind == op_kind::forward) {
      f_end[i] = end;
      if (!activation_found) {
        out.activation = end;
        activation_found = true;
      }
    } else if (op.kind == op_kind::backward_input) {
      b_end[i] = end;
      if (!gradient_found && !p.fused_backward) {
        out.gradient = end;
        gradient_found = true;
      }
    } else if (!gradient_found && p.fused_backward) {
      out.gradient = end;
      gradient_found = true;
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
