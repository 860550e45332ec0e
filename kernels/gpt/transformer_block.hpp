#pragma once

#include "kernels/gpt/attention.hpp"
#include "kernels/gpt/layer.hpp"
#include "kernels/gpt/layernorm.hpp"

#include <map>

namespace deepcee::kernels {

/// Pre-LayerNorm GPT-2 block: x + attn(ln_1(x)), then + mlp(ln_2(.)) with tanh-GELU.
/// Parameters are named transformer.h.{index}.{ln_1,attn.c_attn,attn.c_proj,ln_2,
/// mlp.c_fc,mlp.c_proj}.{weight,bias} with Hugging Face GPT-2 layouts.
class transformer_block final : public layer {
public:
  transformer_block(backend& be, int index, int d_model, int heads, int n_layer, uint64_t seed);

  std::string name() const override { return prefix_; }
  tensor forward(int micro, const tensor& x) override;
  tensor backward_input(int micro, const tensor& dy) override;
  void backward_weight(int micro) override;
  void forget(int micro) override;
  size_t saved_bytes() const override;
  std::vector<parameter*> parameters() override;

private:
  /// Kept from F until B.
  struct forward_state {
    layernorm::saved ln1, ln2;
    tensor ln1_out, ln2_out, attn_out, fc_out, gelu_out;
    causal_attention::saved attn;
  };
  /// Kept from B until W: the inputs of each weighted op and the gradients of its output.
  struct weight_state {
    layernorm::saved ln1, ln2;
    tensor ln1_out, ln2_out, attn_out, gelu_out;
    tensor d_ln1_out, d_qkv, d_attn_proj, d_ln2_out, d_fc, d_mlp_proj;
  };

  backend& be_;
  std::string prefix_;
  layernorm ln_1_, ln_2_;
  parameter c_attn_w_, c_attn_b_, attn_proj_w_, attn_proj_b_;
  parameter c_fc_w_, c_fc_b_, mlp_proj_w_, mlp_proj_b_;
  causal_attention attention_;
  std::map<int, forward_state> forward_states_;
  std::map<int, weight_state> weight_states_;
};

} // namespace deepcee::kernels
