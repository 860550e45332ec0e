#include "actors/stage_actor.hpp"

namespace deepcee::actors {

namespace {

/// Lower bounds on the inputs of role `role` per micro-batch: a received transfer's
/// arrival (exact, or a bound while pipes still decide it), else the sender's promise.
std::vector<double> input_bounds(const stage_state& st, tensor_role role, size_t micro_batches) {
  const auto& by_step = role == tensor_role::activation ? st.activations : st.gradients;
  const double unreceived = st.sync.unreceived_bound(role, st.step);
  std::vector<double> out(micro_batches, unreceived);
  if (auto it = by_step.find(st.step); it != by_step.end())
    for (const auto& [micro, msg] : it->second)
      if (micro >= 0 && static_cast<size_t>(micro) < micro_batches)
        out[static_cast<size_t>(micro)] = msg->arrival_s;
  return out;
}

std::vector<double> known_ends(const std::vector<double>& ends) {
  auto out = ends;
  for (auto& t : out)
    if (t < 0)
      t = runtime::unknown_s;
  return out;
}

} // namespace

runtime::stage_progress progress_of(const stage_state& st) {
  runtime::stage_progress p;
  p.ops = &st.ops;
  p.next_op = st.running ? st.next_op : st.ops.size();
  p.free_at = st.free_at;
  p.first = st.first;
  p.last = st.last;
  p.fused_backward = st.fused_backward;
  p.f = st.costs.f;
  p.b = st.costs.b;
  p.w = st.costs.w;
  p.f_end = known_ends(st.f_end);
  p.b_end = known_ends(st.b_end);
  const size_t m = st.f_end.size();
  if (!p.first)
    p.activation_in = input_bounds(st, tensor_role::activation, m);
  if (!p.last)
    p.gradient_in = input_bounds(st, tensor_role::gradient, m);
  return p;
}

} // namespace deepcee::actors
