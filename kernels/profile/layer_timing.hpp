#pragma once

#include "kernels/backend/backend.hpp"
#include "runtime/base/model_spec.hpp"

#include <cstdint>

namespace deepcee::kernels {

struct timing_options {
  int warmup = 2;      ///< runs of F, B and W before the timed ones (page faults, caches)
  int repetitions = 9; ///< timed runs; each time is their median
};

/// One layer kind's costs on one backend for one micro-batch: the medians of the timed
/// runs, and the bytes the layer holds after F (until B) and after B (until W).
struct layer_timing {
  runtime::layer_kind kind = runtime::layer_kind::block;
  int micro_batch = 1;
  double f_s = 0, b_s = 0, w_s = 0;
  int64_t act_until_b = 0;
  int64_t act_until_w = 0;
};

/// Runs the real layer of `model` (kernels/gpt: embedding, transformer block or head) with
/// its split backward, B the input gradient and W the weight gradient, on random inputs,
/// synchronizing the backend around each op. Throws std::invalid_argument for a
/// micro-batch or repetition count below one.
layer_timing time_layer(backend& be, const runtime::model_config& model, runtime::layer_kind kind,
                        int micro_batch, const timing_options& options = {});

/// One layer's share of the optimizer step on `be`, as a device of the runtime runs it
/// (device_worker). That is the squares of its gradients (the clipping norm), the AdamW
/// update of its parameters, then zeroing its gradients. Returns the median of the timed
/// runs, in seconds.
/// Throws std::invalid_argument for a repetition count below one.
double time_optimizer_step(backend& be, const runtime::model_config& model,
                           runtime::layer_kind kind, const timing_options& options = {});

} // namespace deepcee::kernels
