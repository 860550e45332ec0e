#pragma once

#include "kernels/backend/backend.hpp"

namespace deepcee::kernels {

/// Causal multi-head self-attention without its projections: qkv [B, T, 3C] -> y [B, T, C].
/// It has no weights, so its whole backward belongs to B.
struct causal_attention {
  int heads = 1;

  struct saved {
    tensor q, k, v, probs; // [B, H, T, D] and [B, H, T, T]
  };

  tensor forward(backend& be, const tensor& qkv, saved& s) const;
  /// dqkv [B, T, 3C] from dy [B, T, C].
  tensor backward(backend& be, const tensor& dy, const saved& s) const;
};

} // namespace deepcee::kernels
