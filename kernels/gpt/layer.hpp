#pragma once

#include "kernels/backend/backend.hpp"
#include "kernels/gpt/parameter.hpp"

#include <string>
#include <vector>

namespace deepcee::kernels {

/// One pipeline layer (embedding, transformer block or head) with its backward pass split
/// in two, so zero-bubble schedules can defer weight gradients.
/// `forward` (F) of micro-batch i saves what its backward needs, keyed by i.
/// `backward_input` (B) returns the gradient of the input and keeps only what W needs.
/// `backward_weight` (W) accumulates the weight gradients of i and frees its state.
/// F, B and W of different micro-batches interleave in any order that keeps F(i) before
/// B(i) before W(i). The accumulated gradients equal those of a fused backward.
/// Layers never modify their inputs, and callers must not modify a tensor after passing it.
class layer {
public:
  virtual ~layer() = default;
  virtual std::string name() const = 0;
  virtual tensor forward(int micro, const tensor& x) = 0;
  virtual tensor backward_input(int micro, const tensor& dy) = 0;
  virtual void backward_weight(int micro) = 0;
  /// Drops the state of micro-batch `micro` (after an evaluation-only forward).
  virtual void forget(int micro) = 0;
  /// Bytes held for micro-batches between F and W (memory accounting and tests).
  virtual size_t saved_bytes() const = 0;
  virtual std::vector<parameter*> parameters() = 0;
};

} // namespace deepcee::kernels
