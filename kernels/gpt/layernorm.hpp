#pragma once

#include "kernels/backend/backend.hpp"
#include "kernels/gpt/parameter.hpp"

#include <string>

namespace deepcee::kernels {

/// LayerNorm over the last dimension with its learned scale and shift.
struct layernorm {
  parameter weight; ///< gamma
  parameter bias;   ///< beta

  layernorm(backend& be, const std::string& prefix, int64_t width, uint64_t seed);

  /// What both halves of the backward need from the forward.
  struct saved {
    tensor x, mean, rstd;
  };

  tensor forward(backend& be, const tensor& x, saved& s) const;
  tensor backward_input(backend& be, const tensor& dy, const saved& s) const;
  void backward_weight(backend& be, const tensor& dy, const saved& s);
};

constexpr float layernorm_eps = 1e-5f;

} // namespace deepcee::kernels
