#pragma once

#include <cstdint>

/// A step's loss is the mean of the per-token losses over every token of its global batch.
/// The devices scale each token's loss (and so its gradient) by 1 / tokens as they compute
/// it. The sum over all stages and pipelines is then the mean. The coordinator divides the
/// summed loss by the same count. Both read it here, so that they cannot disagree.
namespace deepcee::runtime {

/// The tokens one step trains on: `global_batch` sequences of `context` tokens.
inline int64_t tokens_per_step(int64_t global_batch, int context) {
  return global_batch * context;
}

/// What each token's loss is multiplied by on the devices: 1 / tokens_per_step.
inline float loss_scale(int64_t global_batch, int context) {
  return 1.0f / static_cast<float>(tokens_per_step(global_batch, context));
}

/// The step's mean loss from the sum of its tokens' losses.
inline double mean_loss(double loss_sum, int64_t global_batch, int context) {
  return loss_sum / static_cast<double>(tokens_per_step(global_batch, context));
}

} // namespace deepcee::runtime
