#pragma once

#include "kernels/gpt/parameter.hpp"
#include "runtime/base/train_config.hpp"

#include <vector>

namespace deepcee::kernels {

/// AdamW (decoupled weight decay on matrices and embeddings, bias correction) with
/// global-norm gradient clipping. The moments live on the parameters' backend.
/// Clipping needs the norm over every parameter of the model, which a pipeline stage
/// holds only part of: `grad_sum_squares` gives this part's share, and `step` takes the
/// global norm.
class adamw {
public:
  adamw(backend& be, std::vector<parameter*> params, const runtime::optimizer_config& config);

  double grad_sum_squares() const;
  /// One update at learning rate `lr`; `step` counts from 1. Returns the clip factor.
  float step(float lr, int step, double global_grad_norm);

  /// The moments, parallel to the parameters (for checkpoints).
  std::vector<tensor>& first_moments() { return m_; }
  std::vector<tensor>& second_moments() { return v_; }
  const std::vector<parameter*>& parameters() const { return params_; }

private:
  backend& be_;
  std::vector<parameter*> params_;
  runtime::optimizer_config config_;
  std::vector<tensor> m_, v_;
};

} // namespace deepcee::kernels
