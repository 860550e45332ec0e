#pragma once

#include "kernels/gpt/gpt_model.hpp"
#include "kernels/optim/adamw.hpp"
#include "runtime/plan/plan.hpp"

#include <memory>
#include <vector>

namespace deepcee::kernels {

/// The compute of one device in one pipeline stage: its slice of the model, its share of
/// each micro-batch's samples, and its optimizer. The runtime (actors, or the sequential
/// executor in tests) moves the tensors between workers; a worker only computes.
///
/// Samples: micro-batch i of pipeline p holds the global batch's samples
/// [offset_p + i * b, offset_p + (i + 1) * b), with offset_p = b * sum_{q < p} m_q;
/// inside a stage, device j of the stage takes the contiguous sub-range
/// [sum_{k < j} samples_k, + samples_j) of every micro-batch (see sample_range).
class stage_worker {
public:
  stage_worker(backend& be, const runtime::model_config& model, int first_layer, int last_layer,
               uint64_t seed, const runtime::optimizer_config& optimizer);

  /// F on this device's samples. `input` is tokens [n, T] (first stage) or the activation
  /// [n, T, C] of these samples; the last stage also gets targets and the loss scale
  /// (1 / tokens in the whole global batch) and returns per-token losses [n * T].
  tensor forward(int micro, const tensor& input, const tensor* targets, float loss_scale);
  tensor backward_input(int micro, const tensor& grad_output);
  void backward_weight(int micro);

  gpt_model& model() { return model_; }
  adamw& optimizer() { return optimizer_; }

private:
  gpt_model model_;
  adamw optimizer_;
};

/// [begin, end) sample range of device `j` of a stage inside a micro-batch.
std::pair<int, int> sample_range(const runtime::stage_plan& stage, int j);

/// First global-batch sample of micro-batch `micro` of pipeline `p`.
int micro_batch_offset(const runtime::plan& plan, int p, int micro);

} // namespace deepcee::kernels
