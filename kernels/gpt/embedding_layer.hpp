#pragma once

#include "kernels/gpt/layer.hpp"

#include <map>

namespace deepcee::kernels {

/// Token + position embedding: tokens [B, T] (i32) -> [B, T, C]. Its input is data, so B
/// returns an empty tensor and only saves the output gradient for W.
class embedding_layer final : public layer {
public:
  embedding_layer(backend& be, int vocab, int context, int d_model, uint64_t seed);

  std::string name() const override { return "transformer.wte+wpe"; }
  tensor forward(int micro, const tensor& tokens) override;
  tensor backward_input(int micro, const tensor& dy) override;
  void backward_weight(int micro) override;
  void forget(int micro) override;
  size_t saved_bytes() const override;
  std::vector<parameter*> parameters() override { return {&wte_, &wpe_}; }

private:
  struct weight_state {
    tensor tokens, dy;
  };

  backend& be_;
  parameter wte_, wpe_;
  std::map<int, tensor> tokens_;
  std::map<int, weight_state> weight_states_;
};

} // namespace deepcee::kernels
