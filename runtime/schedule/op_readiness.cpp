#include "runtime/schedule/op_readiness.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::runtime {

op_input input_of(op_kind kind, stage_place place) {
  switch (kind) {
  case op_kind::forward:
    return place.first ? op_input::none : op_input::activation;
  case op_kind::backward_input:
    return place.last ? op_input::own_forward : op_input::gradient;
  case op_kind::backward_weight:
    return op_input::own_backward;
  }
  return op_input::none;
}

tensor_flow output_of(op_kind kind, stage_place place) {
  if (kind == op_kind::forward && !place.last)
    return tensor_flow::activation_to_next;
  if (kind == op_kind::backward_input && !place.first)
    return tensor_flow::gradient_to_previous;
  return tensor_flow::none;
}

tensor_flow released_by(op_kind kind, stage_place place) {
  if (kind == op_kind::forward)
    return output_of(kind, place);
  const auto releasing = place.fused_backward ? op_kind::backward_weight : op_kind::backward_input;
  return kind == releasing ? output_of(op_kind::backward_input, place) : tensor_flow::none;
}

op_kind sender_of(op_input input, bool fused_backward) {
  switch (input) {
  case op_input::activation:
  case op_input::own_forward:
    return op_kind::forward;
  case op_input::gradient:
    return fused_backward ? op_kind::backward_weight : op_kind::backward_input;
  case op_input::own_backward:
    return op_kind::backward_input;
  case op_input::none:
    break;
  }
  throw std::invalid_argument("sender_of: an op without input has no sender");
}

void in_flight::count(op_kind kind) {
  switch (kind) {
  case op_kind::forward:
    ++forward_held;
    break;
  case op_kind::backward_input:
    --forward_held;
    ++backward_held;
    break;
  case op_kind::backward_weight:
    --backward_held;
    break;
  }
}

bool admits_forward(const in_flight& held, const stage_cost& cost) {
  const double one = std::max(cost.activation_bytes, cost.weight_grad_bytes);
  return (held.forward_held + 1) * one + held.backward_held * cost.weight_grad_bytes <=
         cost.memory_limit;
}

bool within_memory(double peak_bytes, double limit) {
  return peak_bytes <= limit * (1.0 + 1e-12);
}

stage_readiness::stage_readiness(stage_place place, int micro_batches, double step_start)
    : place_(place) {
  if (micro_batches < 0)
    throw std::invalid_argument("stage_readiness: " + std::to_string(micro_batches) +
                                " micro-batches");
  const auto m = static_cast<size_t>(micro_batches);
  forward_.assign(m, place.first ? step_start : not_yet);
  backward_.assign(m, not_yet);
  weight_.assign(m, not_yet);
}

const std::vector<double>& stage_readiness::times(op_kind kind) const {
  return kind == op_kind::forward          ? forward_
         : kind == op_kind::backward_input ? backward_
                                           : weight_;
}

std::vector<double>& stage_readiness::times(op_kind kind) {
  return const_cast<std::vector<double>&>(std::as_const(*this).times(kind));
}

void stage_readiness::input_arrived(op_input input, int micro, double at) {
  if (input == op_input::activation && !place_.first)
    times(op_kind::forward).at(static_cast<size_t>(micro)) = at;
  else if (input == op_input::gradient && !place_.last)
    times(op_kind::backward_input).at(static_cast<size_t>(micro)) = at;
  else
    throw std::invalid_argument("stage_readiness: this stage takes no such input from a "
                                "neighbour (micro-batch " +
                                std::to_string(micro) + ")");
}

tensor_flow stage_readiness::op_ended(schedule_op op, double at) {
  if (op.kind == op_kind::forward && place_.last)
    times(op_kind::backward_input).at(static_cast<size_t>(op.micro)) = at;
  else if (op.kind == op_kind::backward_input)
    times(op_kind::backward_weight).at(static_cast<size_t>(op.micro)) = at;
  held_.count(op.kind);
  return released_by(op.kind, place_);
}

double stage_readiness::ready_at(schedule_op op) const {
  return times(op.kind).at(static_cast<size_t>(op.micro));
}

stage_place place_in(const pipeline_schedule& schedule, int stage) {
  return {stage == 0, stage == schedule.stage_count() - 1, schedule.fused_backward};
}

op_list_run::op_list_run(const std::vector<schedule_op>& ops, stage_place place, int micro_batches,
                         double step_start)
    : ops_(&ops), readiness_(place, micro_batches, step_start) {}

tensor_flow op_list_run::complete_next(double at) {
  const auto op = next();
  ++next_;
  return readiness_.op_ended(op, at);
}

} // namespace deepcee::runtime
