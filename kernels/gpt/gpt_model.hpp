#pragma once

#include "kernels/gpt/head_layer.hpp"
#include "kernels/gpt/layer.hpp"
#include "runtime/base/train_config.hpp"

#include <memory>
#include <vector>

namespace deepcee::kernels {

/// A contiguous range [first, last) of the model's pipeline layers: 0 is the embedding,
/// 1..n_layer the transformer blocks, n_layer + 1 the head. The whole model is the range
/// [0, n_layer + 2); a pipeline stage holds a smaller one. Weights depend only on
/// (seed, parameter name), so slices of one seed compose into the whole model.
class gpt_model {
public:
  gpt_model(backend& be, const runtime::model_config& config, uint64_t seed);
  gpt_model(backend& be, const runtime::model_config& config, int first, int last, uint64_t seed);

  static int layer_count(const runtime::model_config& c) { return c.n_layer + 2; }

  const runtime::model_config& config() const { return config_; }

  /// F of micro-batch `micro`. `input` is tokens [B, T] (i32) for a slice with the
  /// embedding, else the previous slice's activation [B, T, C]. A slice with the head
  /// needs `targets` [B, T] and returns the per-token losses [B * T]; others return the
  /// activation for the next slice.
  tensor forward(int micro, const tensor& input, const tensor* targets = nullptr,
                 float loss_scale = 1.0f);
  /// B: the gradient of this slice's input from that of its output (ignored, may be
  /// empty, for a slice with the head). Empty for a slice with the embedding.
  tensor backward_input(int micro, const tensor& grad_output);
  /// W: accumulate this slice's weight gradients of `micro`.
  void backward_weight(int micro);
  /// Drop what F saved for `micro` (evaluation).
  void forget(int micro);

  std::vector<parameter*> parameters();
  void zero_grad();
  size_t saved_bytes() const;

private:
  backend& be_;
  runtime::model_config config_;
  std::vector<std::unique_ptr<layer>> layers_;
  head_layer* head_ = nullptr;
};

} // namespace deepcee::kernels
