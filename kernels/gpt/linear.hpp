#pragma once

#include "kernels/backend/backend.hpp"
#include "kernels/gpt/parameter.hpp"

namespace deepcee::kernels {

/// y = x W + b over rows, with W stored [in, out] (Hugging Face GPT-2 Conv1D layout).
/// x is [rows, in]; returns y [rows, out].
tensor linear_forward(backend& be, const tensor& x, const parameter& w, const parameter& b);

/// dx = dy W^T (the B half of the backward).
tensor linear_backward_input(backend& be, const tensor& dy, const parameter& w);

/// dW += x^T dy, db += sum over rows of dy (the W half of the backward).
void linear_backward_weight(backend& be, const tensor& x, const tensor& dy, parameter& w,
                            parameter& b);

/// Rows of an activation: every dimension but the last.
inline int64_t rows_of(const tensor& t) {
  return t.numel() / t.shape().back();
}

} // namespace deepcee::kernels
