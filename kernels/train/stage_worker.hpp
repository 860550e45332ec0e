#pragma once

#include "kernels/gpt/gpt_model.hpp"
#include "kernels/optim/adamw.hpp"
#include "runtime/plan/plan.hpp"

#include <map>
#include <memory>
#include <vector>

namespace deepcee::kernels {

/// The compute of one device in one pipeline stage: its slice of the model, its share of
/// each micro-batch's samples, and its optimizer. The runtime (actors, or the sequential
/// executor in tests) moves the tensors between workers; a worker only computes.
///
/// Samples: micro-batch i of pipeline p holds the global batch's samples
/// [offset_p + i * b, offset_p + (i + 1) * b), with offset_p = b * sum_{q < p} m_q.
/// Inside a stage, device j of the stage takes the contiguous sub-range
/// [sum_{k < j} samples_k, + samples_j) of every micro-batch (see sample_range).
class stage_worker {
public:
  stage_worker(backend& be, const runtime::model_config& model, int first_layer, int last_layer,
               uint64_t seed, const runtime::optimizer_config& optimizer);

  /// F on this device's samples. `input` is tokens [n, T] (first stage) or the activation
  /// [n, T, C] of these samples. The last stage also gets targets and the loss scale
  /// (1 / tokens in the whole global batch), and returns per-token losses [n * T].
  /// With recomputation on, F keeps only `input` (and `targets` with the loss scale) of
  /// the micro-batch and drops everything its layers saved; B first runs F again on them
  /// to rebuild it. The math is the same: the rebuilt state equals the dropped one.
  tensor forward(int micro, const tensor& input, const tensor* targets, float loss_scale);
  tensor backward_input(int micro, const tensor& grad_output);
  void backward_weight(int micro);

  /// Activation recomputation (runtime::stage_plan::recompute) for the micro-batches whose
  /// F runs from now on.
  void set_recompute(bool on) { recompute_ = on; }
  bool recompute() const { return recompute_; }
  /// Bytes held for micro-batches between F and W: the layers' saved state and the inputs
  /// a recomputing worker keeps.
  size_t held_bytes() const;

  gpt_model& model() { return model_; }
  adamw& optimizer() { return optimizer_; }

private:
  /// What a recomputing worker keeps of a micro-batch from F until B.
  struct kept_input {
    tensor input;
    tensor targets; ///< empty without the head
    float loss_scale = 1.0f;
  };

  gpt_model model_;
  adamw optimizer_;
  bool recompute_ = false;
  std::map<int, kept_input> kept_;
};

/// [begin, end) sample range of device `j` of a stage inside a micro-batch.
std::pair<int, int> sample_range(const runtime::stage_plan& stage, int j);

/// First global-batch sample of micro-batch `micro` of pipeline `p`.
int micro_batch_offset(const runtime::plan& plan, int p, int micro);

} // namespace deepcee::kernels
