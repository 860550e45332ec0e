#pragma once

#include "kernels/gpt/layer.hpp"
#include "kernels/gpt/layernorm.hpp"

#include <map>

namespace deepcee::kernels {

/// Final LayerNorm, LM head (lm_head.weight [V, C]) and softmax cross-entropy. The head is
/// not tied to wte, so that the first and last pipeline stages share no weights.
/// `forward` returns the per-token losses [B * T]. The backward starts from the gradient of
/// loss_scale * sum(losses). So micro-batches and data-parallel shards of one global batch
/// each pass loss_scale = 1 / (tokens in the global batch).
class head_layer final : public layer {
public:
  head_layer(backend& be, int vocab, int d_model, uint64_t seed);

  /// Must precede forward(micro): the next tokens [B, T] (i32) and the loss scale.
  void set_targets(int micro, const tensor& targets, float loss_scale);

  std::string name() const override { return "lm_head"; }
  tensor forward(int micro, const tensor& x) override;
  /// `dy` is ignored (the head starts the backward).
  tensor backward_input(int micro, const tensor& dy) override;
  void backward_weight(int micro) override;
  void forget(int micro) override;
  size_t saved_bytes() const override;
  std::vector<parameter*> parameters() override { return {&ln_f_.weight, &ln_f_.bias, &lm_head_}; }

private:
  struct target_state {
    tensor targets;
    float scale = 1;
  };
  struct forward_state {
    layernorm::saved ln;
    tensor ln_out, probs;
    target_state target;
  };
  struct weight_state {
    layernorm::saved ln;
    tensor ln_out, d_logits, d_ln_out;
  };

  backend& be_;
  layernorm ln_f_;
  parameter lm_head_;
  std::map<int, target_state> targets_;
  std::map<int, forward_state> forward_states_;
  std::map<int, weight_state> weight_states_;
};

} // namespace deepcee::kernels
