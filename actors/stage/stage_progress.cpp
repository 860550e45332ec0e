#include "actors/stage/stage_actor.hpp"

namespace deepcee::actors {

namespace {

/// The lower bound on the arrival of input `input` of micro-batch `micro`: a received
/// transfer's arrival (exact, or a bound while pipes still decide it), else the sender's
/// promise.
double input_bound(const stage_state& st, runtime::op_input input, int micro) {
  const auto role =
      input == runtime::op_input::activation ? tensor_role::activation : tensor_role::gradient;
  const auto& by_step = role == tensor_role::activation ? st.activations : st.gradients;
  if (auto it = by_step.find(st.step); it != by_step.end())
    if (auto msg = it->second.find(micro); msg != it->second.end())
      return msg->second->arrival_s;
  return st.sync.unreceived_bound(role, st.step);
}

/// Gives every neighbour input that is not there yet its lower bound.
void bound_inputs(const stage_state& st, runtime::stage_readiness& readiness) {
  using runtime::op_input;
  using runtime::op_kind;
  for (int i = 0; i < readiness.micro_batches(); ++i) {
    if (!st.place.first && !readiness.ready({op_kind::forward, i}))
      readiness.input_arrived(op_input::activation, i, input_bound(st, op_input::activation, i));
    if (!st.place.last && !readiness.ready({op_kind::backward_input, i}))
      readiness.input_arrived(op_input::gradient, i, input_bound(st, op_input::gradient, i));
  }
}

} // namespace

runtime::stage_progress progress_of(const stage_state& st) {
  runtime::stage_progress p;
  p.ops = &st.ops;
  p.next_op = st.phase == stage_phase::computing ? st.list.position() : st.ops.size();
  p.free_at = st.free_at;
  p.f = st.costs.f;
  p.b = st.costs.b;
  p.w = st.costs.w;
  p.readiness = st.list.readiness();
  bound_inputs(st, p.readiness);
  return p;
}

} // namespace deepcee::actors
