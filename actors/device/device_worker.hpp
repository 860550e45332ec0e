#pragma once

#include "kernels/backend/backend.hpp"
#include "kernels/train/checkpoint.hpp"
#include "kernels/train/stage_worker.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/plan/plan.hpp"

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace deepcee::actors {

/// What one device of a stage computes, apart from actors: its backend, its
/// kernels::stage_worker for the stage's layers [first_layer, last_layer), and the
/// host-side views the runtime needs (rows in and out, gradients as one vector). A device
/// actor owns one (device_actor.hpp).
class device_worker {
public:
  device_worker(const runtime::model_config& model, int first_layer, int last_layer, uint64_t seed,
                const runtime::optimizer_config& optimizer,
                const kernels::backend_options& backend);

  bool first() const { return first_layer_ == 0; }
  bool last() const { return last_layer_ == model_.n_layer + 2; }

  /// F of `samples` samples of micro-batch `micro`, the first being sample `first_sample`
  /// of `batch`. First stage: tokens from `batch`; others: `input` [samples, T, C]. The last
  /// stage returns the sum of its per-token losses (targets from `batch`, each scaled by
  /// `loss_scale`) and writes nothing; the others write [samples, T, C] into `out` and
  /// return 0. Rows are uploaded straight from `input` and downloaded straight into `out`
  /// (a message's payload): no staging buffer.
  double forward(int micro, std::span<const float> input, const runtime::token_batch* batch,
                 int first_sample, int samples, float loss_scale, std::span<float> out);
  /// B: the input gradient [samples, T, C] into `out` from the output's (ignored on the last
  /// stage); nothing is written on the first stage.
  void backward_input(int micro, std::span<const float> grad_output, int samples,
                      std::span<float> out);
  void backward_weight(int micro);
  /// Activation recomputation for the F ops from now on (kernels::stage_worker).
  void set_recompute(bool on);

  /// Values of every gradient, layer by layer, each layer's parameters in model order.
  size_t gradient_size() const;
  std::vector<float> gradients();
  /// The sum of the squares of gradients(), taken where they lie (in double).
  double gradient_sum_squares();
  void set_gradients(std::span<const float> values);
  /// The gradient tensors in gradients()'s order (device memory: for NCCL).
  std::vector<kernels::tensor*> gradient_tensors();

  /// AdamW with the global norm, then the gradients are cleared.
  void optimizer_step(double lr, int step, double grad_norm);

  /// Weights and AdamW moments of the layers, in model order.
  std::vector<kernels::parameter_state> parameter_states();
  /// Loads weights and moments; a missing tensor, another shape or a tensor that is not
  /// one of the layers throws input_error naming `source`, and then nothing is changed.
  void load_parameter_states(const std::vector<kernels::parameter_state>& states,
                             const std::filesystem::path& source);

  kernels::backend& backend() { return *backend_; }

private:
  runtime::model_config model_;
  int first_layer_, last_layer_;
  std::unique_ptr<kernels::backend> backend_;
  std::unique_ptr<kernels::stage_worker> worker_;
  std::vector<kernels::parameter*> by_layer_; ///< gradients()'s order
};

/// The backend of a device actor. [train] device = "cpu" (the default): the host's CPU
/// with [train] threads OpenBLAS threads, the devices being emulated. "cuda": a real GPU,
/// the device's place among its node's devices (`local_index`) wrapping around the
/// `visible_gpus` this process sees, bf16 products when [train] bf16 says so.
kernels::backend_options device_backend(const runtime::train_config& train, int local_index,
                                        int visible_gpus);

/// A hash (FNV-1a over 64-bit words) of the names, shapes and bits of the weights and moments of
/// `states`: equal states give equal digests, and the devices of a stage compare theirs.
/// Bits, not values: the devices of a stage step on bit-identical gradients (the ring sums
/// in one order) with the same arithmetic, so they hold the same bits; hardware that rounds
/// otherwise (another GPU generation) would show as a difference, and be named.
uint64_t state_digest(const std::vector<kernels::parameter_state>& states);

/// The pipeline layer a parameter belongs to, from its GPT-2 name.
int layer_of_parameter(const std::string& name, int n_layer);

} // namespace deepcee::actors
