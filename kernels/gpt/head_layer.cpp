#include "kernels/gpt/head_layer.hpp"

#include "kernels/gpt/linear.hpp"
#include "kernels/gpt/micro_state.hpp"

namespace deepcee::kernels {

head_layer::head_layer(backend& be, int vocab, int d_model, uint64_t seed)
    : be_(be), ln_f_(be, "transformer.ln_f", d_model, seed),
      lm_head_(
          make_parameter(be, "lm_head.weight", {vocab, d_model}, init_kind::normal, 0.02f, seed)) {}

void head_layer::set_targets(int micro, const tensor& targets, float loss_scale) {
  if (targets.type() != dtype::i32)
    throw std::invalid_argument("lm_head: targets must be i32");
  targets_[micro] = {targets, loss_scale};
}

tensor head_layer::forward(int micro, const tensor& x) {
  forward_state s;
  s.target = take_state(targets_, micro, name(), "F (targets)");
  int64_t n = rows_of(x);
  int V = static_cast<int>(lm_head_.value.dim(0)), C = static_cast<int>(lm_head_.value.dim(1));
  if (x.shape().back() != C || s.target.targets.numel() != n)
    throw std::invalid_argument("lm_head: input " + shape_string(x.shape()) + " and targets " +
                                shape_string(s.target.targets.shape()) + " do not match");
  s.ln_out = ln_f_.forward(be_, x, s.ln);
  tensor logits = be_.alloc({n, V});
  // logits = ln_out lm_head^T
  be_.gemm(packed_gemm(false, true, static_cast<int>(n), V, C), s.ln_out.f32(),
           lm_head_.value.f32(), logits.f32());
  tensor losses = be_.alloc({n});
  s.probs = be_.alloc({n, V});
  be_.cross_entropy_forward(losses.f32(), s.probs.f32(), logits.f32(), s.target.targets.i32(), n,
                            V);
  forward_states_[micro] = std::move(s);
  return losses;
}

tensor head_layer::backward_input(int micro, const tensor&) {
  forward_state s = take_state(forward_states_, micro, name(), "B");
  int64_t n = s.probs.dim(0);
  int V = static_cast<int>(lm_head_.value.dim(0)), C = static_cast<int>(lm_head_.value.dim(1));
  weight_state w;
  w.d_logits = s.probs; // overwritten in place: probs are not needed after this
  be_.cross_entropy_backward(w.d_logits.f32(), s.probs.f32(), s.target.targets.i32(),
                             s.target.scale, n, V);
  w.d_ln_out = be_.alloc({n, C});
  // d_ln_out = d_logits lm_head
  be_.gemm(packed_gemm(false, false, static_cast<int>(n), C, V), w.d_logits.f32(),
           lm_head_.value.f32(), w.d_ln_out.f32());
  tensor dx = ln_f_.backward_input(be_, w.d_ln_out, s.ln).reshaped(s.ln.x.shape());
  w.ln = std::move(s.ln);
  w.ln_out = std::move(s.ln_out);
  weight_states_[micro] = std::move(w);
  return dx;
}

void head_layer::backward_weight(int micro) {
  weight_state w = take_state(weight_states_, micro, name(), "W");
  int64_t n = w.d_logits.dim(0);
  int V = static_cast<int>(lm_head_.value.dim(0)), C = static_cast<int>(lm_head_.value.dim(1));
  // d lm_head += d_logits^T ln_out
  be_.gemm(packed_gemm(true, false, V, C, static_cast<int>(n), 1.0f), w.d_logits.f32(),
           w.ln_out.f32(), lm_head_.grad.f32());
  ln_f_.backward_weight(be_, w.d_ln_out, w.ln);
}

void head_layer::forget(int micro) {
  targets_.erase(micro);
  forward_states_.erase(micro);
  weight_states_.erase(micro);
}

size_t head_layer::saved_bytes() const {
  size_t n = 0;
  for (const auto& [_, s] : forward_states_)
    n += tensor_bytes(s.ln) + tensor_bytes({&s.ln_out, &s.probs, &s.target.targets});
  for (const auto& [_, w] : weight_states_)
    n += tensor_bytes(w.ln) + tensor_bytes({&w.ln_out, &w.d_logits, &w.d_ln_out});
  return n;
}

} // namespace deepcee::kernels
