#pragma once

#include "runtime/base/train_config.hpp"
#include "runtime/plan/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

/// The exchange of gradients between pipelines: every holder of a layer sends its
/// stage's sum (over its devices) of that layer's gradients to the other pipelines'
/// holders, and each sums all contributions. Pure rules over the plan; the stage actor
/// only moves the values.
namespace deepcee::runtime {

/// Layers [first, last) of the model (0 is the embedding, n_layer + 1 the head).
struct layer_range {
  int first = 0;
  int last = 0;
  int size() const { return last - first; }
};

/// Values in layers [first, last) of a stage's gradient vector: each layer's parameters in
/// model order, layer after layer.
size_t gradient_size(const model_config& model, int first, int last);

/// A piece of a stage's gradient vector bound for another pipeline's stage.
struct share_slice {
  int pipeline = 0;
  int stage = 0;
  layer_range layers; ///< the layers both stages hold
  size_t begin = 0;   ///< the piece's values in the sender's vector: [begin, end)
  size_t end = 0;
};

/// Where the gradients of stage (pipeline, layers) go: one slice per stage of another
/// pipeline that holds some of its layers, in pipeline then stage order.
std::vector<share_slice> share_slices(const plan& p, int pipeline, layer_range layers);

/// What a received gradient share claims.
struct share_header {
  int64_t step = 0;
  int pipeline = 0;
  layer_range layers;
  size_t values = 0;
};

/// Why a share cannot be one for the stage (pipeline, layers) at step `step`: it must come
/// from another pipeline of the plan, for this or the next step, cover layers of this
/// stage and carry one value per parameter of them. Empty when it can.
std::string share_refusal(const plan& p, int pipeline, int64_t step, layer_range layers,
                          const share_header& share);

/// Whether shares covering these layer ranges complete the other pipelines' part of a
/// stage's layers (each other pipeline holds every layer once).
bool shares_complete(int pipelines, layer_range layers, const std::vector<layer_range>& received);

/// A share's values with its sender and layers.
struct share_values {
  int pipeline = 0;
  layer_range layers;
  std::span<const float> values;
};

/// The stage's gradient summed over every pipeline: its own sum plus the shares, added in
/// pipeline order so that every holder of a layer ends with bit-identical sums. Throws
/// std::invalid_argument when a share does not fit the stage's layers.
std::vector<float> sum_over_pipelines(const model_config& model, int pipelines, int own_pipeline,
                                      layer_range layers, std::vector<float> own,
                                      const std::vector<share_values>& shares);

} // namespace deepcee::runtime
