#include "kernels/gpt/gpt_model.hpp"

#include "kernels/gpt/embedding_layer.hpp"
#include "kernels/gpt/transformer_block.hpp"

#include <stdexcept>

namespace deepcee::kernels {

gpt_model::gpt_model(backend& be, const runtime::model_config& config, uint64_t seed)
    : gpt_model(be, config, 0, layer_count(config), seed) {}

gpt_model::gpt_model(backend& be, const runtime::model_config& config, int first, int last,
                     uint64_t seed)
    : be_(be), config_(config) {
  if (first < 0 || last > layer_count(config) || first >= last)
    throw std::invalid_argument("gpt_model: layer range [" + std::to_string(first) + ", " +
                                std::to_string(last) + ") is not inside [0, " +
                                std::to_string(layer_count(config)) + ")");
  for (int i = first; i < last; ++i) {
    if (i == 0) {
      layers_.push_back(std::make_unique<embedding_layer>(be, config.vocab, config.context,
                                                          config.d_model, seed));
    } else if (i == layer_count(config) - 1) {
      auto head = std::make_unique<head_layer>(be, config.vocab, config.d_model, seed);
      head_ = head.get();
      layers_.push_back(std::move(head));
    } else {
      layers_.push_back(std::make_unique<transformer_block>(be, i - 1, config.d_model,
                                                            config.n_head, config.n_layer, seed));
    }
  }
}

tensor gpt_model::forward(int micro, const tensor& input, const tensor* targets, float loss_scale) {
  if (head_ != nullptr) {
    if (targets == nullptr)
      throw std::invalid_argument("gpt_model: the slice with the head needs targets");
    head_->set_targets(micro, *targets, loss_scale);
  }
  tensor x = input;
  for (auto& l : layers_)
    x = l->forward(micro, x);
  return x;
}

tensor gpt_model::backward_input(int micro, const tensor& grad_output) {
  tensor g = grad_output;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    g = (*it)->backward_input(micro, g);
  return g;
}

void gpt_model::backward_weight(int micro) {
  for (auto& l : layers_)
    l->backward_weight(micro);
}

void gpt_model::forget(int micro) {
  for (auto& l : layers_)
    l->forget(micro);
}

std::vector<parameter*> gpt_model::parameters() {
  std::vector<parameter*> out;
  for (auto& l : layers_)
    for (parameter* p : l->parameters())
      out.push_back(p);
  return out;
}

void gpt_model::zero_grad() {
  for (parameter* p : parameters())
    be_.fill(p->grad.f32(), 0.0f, p->grad.numel());
}

size_t gpt_model::saved_bytes() const {
  size_t n = 0;
  for (const auto& l : layers_)
    n += l->saved_bytes();
  return n;
}

} // namespace deepcee::kernels
