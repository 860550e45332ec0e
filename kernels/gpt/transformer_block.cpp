#include "kernels/gpt/transformer_block.hpp"

#include "kernels/gpt/linear.hpp"
#include "kernels/gpt/micro_state.hpp"

#include <cmath>
#include <stdexcept>

namespace deepcee::kernels {
transformer_block::transformer_block(backend& be, int index, int d_model, int heads, int n_layer,
                                     uint64_t seed)
    : be_(be), prefix_("transformer.h." + std::to_string(index)),
      ln_1_(be, prefix_ + ".ln_1", d_model, seed), ln_2_(be, prefix_ + ".ln_2", d_model, seed),
      c_attn_w_(make_parameter(be, prefix_ + ".attn.c_attn.weight", {d_model, 3 * d_model},
                               init_kind::normal, 0.02f, seed)),
      c_attn_b_(make_parameter(be, prefix_ + ".attn.c_attn.bias", {3 * d_model}, init_kind::zeros,
                               0, seed)),
      // GPT-2 scales the projections into the residual stream by 1/sqrt(2 * n_layer).
      attn_proj_w_(make_parameter(be, prefix_ + ".attn.c_proj.weight", {d_model, d_model},
                                  init_kind::normal, 0.02f / std::sqrt(2.0f * n_layer), seed)),
      attn_proj_b_(
          make_parameter(be, prefix_ + ".attn.c_proj.bias", {d_model}, init_kind::zeros, 0, seed)),
      c_fc_w_(make_parameter(be, prefix_ + ".mlp.c_fc.weight", {d_model, 4 * d_model},
                             init_kind::normal, 0.02f, seed)),
      c_fc_b_(
          make_parameter(be, prefix_ + ".mlp.c_fc.bias", {4 * d_model}, init_kind::zeros, 0, seed)),
      mlp_proj_w_(make_parameter(be, prefix_ + ".mlp.c_proj.weight", {4 * d_model, d_model},
                                 init_kind::normal, 0.02f / std::sqrt(2.0f * n_layer), seed)),
      mlp_proj_b_(
          make_parameter(be, prefix_ + ".mlp.c_proj.bias", {d_model}, init_kind::zeros, 0, seed)),
      attention_{heads} {
  if (d_model % heads != 0)
    throw std::invalid_argument(prefix_ + ": d_model " + std::to_string(d_model) +
                                " is not divisible by " + std::to_string(heads) + " heads");
}

tensor transformer_block::forward(int micro, const tensor& x) {
  if (x.rank() != 3 || x.dim(2) != c_attn_w_.value.dim(0))
    throw std::invalid_argument(prefix_ + ": input has shape " + shape_string(x.shape()));
  forward_state s;
  s.ln1_out = ln_1_.forward(be_, x, s.ln1);
  tensor qkv = linear_forward(be_, s.ln1_out, c_attn_w_, c_attn_b_);
  s.attn_out = attention_.forward(be_, qkv, s.attn);
  tensor residual = linear_forward(be_, s.attn_out, attn_proj_w_, attn_proj_b_);
  be_.add(residual.f32(), residual.f32(), x.f32(), x.numel()); // x + attn
  s.ln2_out = ln_2_.forward(be_, residual, s.ln2);
  s.fc_out = linear_forward(be_, s.ln2_out, c_fc_w_, c_fc_b_);
  s.gelu_out = be_.alloc(s.fc_out.shape());
  be_.gelu_forward(s.gelu_out.f32(), s.fc_out.f32(), s.fc_out.numel());
  tensor out = linear_forward(be_, s.gelu_out, mlp_proj_w_, mlp_proj_b_);
  be_.add(out.f32(), out.f32(), residual.f32(), out.numel());
  forward_states_[micro] = std::move(s);
  return out;
}

tensor transformer_block::backward_input(int micro, const tensor& dy) {
  forward_state s = take_state(forward_states_, micro, prefix_, "B");
  weight_state w;
  w.d_mlp_proj = dy;
  tensor d_gelu = linear_backward_input(be_, dy, mlp_proj_w_);
  w.d_fc = be_.alloc(d_gelu.shape());
  be_.gelu_backward(w.d_fc.f32(), d_gelu.f32(), s.fc_out.f32(), d_gelu.numel());
  w.d_ln2_out = linear_backward_input(be_, w.d_fc, c_fc_w_);
  tensor d_residual = ln_2_.backward_input(be_, w.d_ln2_out, s.ln2);
  be_.add(d_residual.f32(), d_residual.f32(), dy.f32(), dy.numel());
  w.d_attn_proj = d_residual;
  tensor d_attn_out = linear_backward_input(be_, d_residual, attn_proj_w_);
  w.d_qkv = attention_.backward(be_, d_attn_out, s.attn);
  w.d_ln1_out = linear_backward_input(be_, w.d_qkv, c_attn_w_);
  tensor dx = ln_1_.backward_input(be_, w.d_ln1_out, s.ln1);
  be_.add(dx.f32(), dx.f32(), d_residual.f32(), dx.numel());

  w.ln1 = std::move(s.ln1);
  w.ln2 = std::move(s.ln2);
  w.ln1_out = std::move(s.ln1_out);
  w.ln2_out = std::move(s.ln2_out);
  w.attn_out = std::move(s.attn_out);
  w.gelu_out = std::move(s.gelu_out);
  weight_states_[micro] = std::move(w);
  return dx;
}

void transformer_block::backward_weight(int micro) {
  weight_state w = take_state(weight_states_, micro, prefix_, "W");
  linear_backward_weight(be_, w.gelu_out, w.d_mlp_proj, mlp_proj_w_, mlp_proj_b_);
  linear_backward_weight(be_, w.ln2_out, w.d_fc, c_fc_w_, c_fc_b_);
  ln_2_.backward_weight(be_, w.d_ln2_out, w.ln2);
  linear_backward_weight(be_, w.attn_out, w.d_attn_proj, attn_proj_w_, attn_proj_b_);
  linear_backward_weight(be_, w.ln1_out, w.d_qkv, c_attn_w_, c_attn_b_);
  ln_1_.backward_weight(be_, w.d_ln1_out, w.ln1);
}

void transformer_block::forget(int micro) {
  forward_states_.erase(micro);
  weight_states_.erase(micro);
}

size_t transformer_block::saved_bytes() const {
  size_t n = 0;
  for (const auto& [_, s] : forward_states_)
    n += tensor_bytes(s.ln1) + tensor_bytes(s.ln2) +
         tensor_bytes({&s.ln1_out, &s.ln2_out, &s.attn_out, &s.fc_out, &s.gelu_out, &s.attn.q,
                       &s.attn.k, &s.attn.v, &s.attn.probs});
  for (const auto& [_, w] : weight_states_)
    n += tensor_bytes(w.ln1) + tensor_bytes(w.ln2) +
         tensor_bytes({&w.ln1_out, &w.ln2_out, &w.attn_out, &w.gelu_out, &w.d_ln1_out, &w.d_qkv,
                       &w.d_attn_proj, &w.d_ln2_out, &w.d_fc, &w.d_mlp_proj});
  return n;
}

std::vector<parameter*> transformer_block::parameters() {
  return {&ln_1_.weight, &ln_1_.bias, &c_attn_w_, &c_attn_b_, &attn_proj_w_, &attn_proj_b_,
          &ln_2_.weight, &ln_2_.bias, &c_fc_w_,   &c_fc_b_,   &mlp_proj_w_,  &mlp_proj_b_};
}

} // namespace deepcee::kernels
