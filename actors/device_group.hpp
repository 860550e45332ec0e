#pragma once

#include "kernels/backend.hpp"
#include "kernels/gpt/checkpoint.hpp"
#include "kernels/gpt/stage_worker.hpp"
#include "runtime/plan.hpp"
#include "runtime/text_corpus.hpp"

#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace deepcee::actors {

/// The devices of one stage (the group/device layer under a stage actor): one
/// kernels::stage_worker per device, each on its own backend, each computing its
/// contiguous share of every micro-batch's samples (kernels::sample_range). The stage actor
/// sees whole micro-batches; this class splits them and joins the results, so what crosses
/// stages does not depend on how either side is split.
class device_group {
public:
  device_group(const runtime::model_config& model, const runtime::stage_plan& stage, uint64_t seed,
               const runtime::optimizer_config& optimizer);

  bool first() const { return first_layer_ == 0; }
  bool last() const;
  int first_layer() const { return first_layer_; }
  int last_layer() const { return last_layer_; }

  /// Values of one activation (or its gradient) of a whole micro-batch: [b, T, C].
  size_t boundary_size() const;

  /// F of a micro-batch whose samples start at `offset` in `batch`. First stage: tokens
  /// from `batch`; others: `input` [b, T, C]. The last stage adds its per-token losses
  /// (scaled by nothing) to `loss_sum` and writes nothing; others write [b, T, C] to `out`.
  /// Each device uploads its rows straight from `input` and downloads its rows straight
  /// into `out` (which may be a message's payload): no staging buffer in between.
  void forward(int micro, std::span<const float> input, const runtime::token_batch& batch,
               int offset, float loss_scale, double& loss_sum, std::span<float> out);
  /// B: the input gradient [b, T, C] into `out` from the output's (ignored on the last
  /// stage); nothing on the first stage.
  void backward_input(int micro, std::span<const float> grad_output, std::span<float> out);
  void backward_weight(int micro);

  /// Gradients of layers [first, last) summed over the devices (device order), each
  /// layer's parameters in model order.
  std::vector<float> gradient_sum(int first, int last);
  /// Sets every device's gradients of layers [first, last) to `values` (the reduced sum).
  void set_gradients(int first, int last, const std::vector<float>& values);
  /// Elements of layers [first, last) in gradient_sum's layout.
  size_t gradient_size(int first, int last) const;
  /// Every device steps AdamW with the global norm, then clears its gradients.
  void optimizer_step(double lr, int step, double grad_norm);

  /// Weights and AdamW moments of the group's layers, in model order. Every device holds
  /// the same (they step on the same reduced gradients): a device that differs from the
  /// first is a bug and throws std::logic_error naming the tensor.
  std::vector<kernels::parameter_state> parameter_states();
  /// Loads weights and moments into every device; a missing tensor, another shape or a
  /// tensor that is not one of the group's layers throws input_error naming `source`, and
  /// then nothing is changed.
  void load_parameter_states(const std::vector<kernels::parameter_state>& states,
                             const std::filesystem::path& source);

private:
  const std::vector<kernels::parameter*>& params(size_t j, int layer) const;

  runtime::model_config model_;
  runtime::stage_plan stage_;
  int first_layer_, last_layer_;
  std::vector<std::unique_ptr<kernels::backend>> backends_;
  std::vector<std::unique_ptr<kernels::stage_worker>> workers_;
  std::vector<std::vector<std::vector<kernels::parameter*>>> by_layer_; ///< [device][layer]
};

/// The pipeline layer a parameter belongs to, from its GPT-2 name.
int layer_of_parameter(const std::string& name, int n_layer);

} // namespace deepcee::actors
