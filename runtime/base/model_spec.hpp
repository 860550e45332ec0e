#pragma once

#include "runtime/base/train_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// The three kinds of pipeline layer of a GPT decoder.
enum class layer_kind { embedding, block, head };

std::string_view to_string(layer_kind k);

/// How activations and their gradients travel between stages.
enum class compression { none, fp16, bf16, int8 };

std::string_view to_string(compression c);
std::optional<compression> parse_compression(std::string_view name);

/// One pipeline layer. FLOPs, memory traffic and activation bytes are per SAMPLE (one
/// sequence of `context` tokens); every one of them is linear in the number of samples,
/// so `work_at` scales them to a micro-batch. Parameter-sized figures do not scale.
struct layer_spec {
  int index = 0;
  layer_kind kind = layer_kind::block;
  std::string name;   ///< "embedding", "h.3", "head"
  int64_t tokens = 0; ///< tokens per sample (the context), which sizes its matrices
  int64_t width = 0;  ///< d_model

  int64_t params = 0;          ///< number of fp32 parameters
  int64_t param_bytes = 0;     ///< fp32 weights
  int64_t grad_bytes = 0;      ///< fp32 gradient accumulators
  int64_t optimizer_bytes = 0; ///< AdamW first and second moments

  double f_flops = 0; ///< forward
  double b_flops = 0; ///< backward, input gradient
  double w_flops = 0; ///< backward, weight gradient

  /// Bytes read and written in DRAM besides the weights (the roofline's memory term).
  double f_traffic = 0;
  double b_traffic = 0;
  double w_traffic = 0;

  int64_t act_until_b = 0; ///< kept from F until B of the same micro-batch
  int64_t act_until_w = 0; ///< kept from B until W of the same micro-batch

  int kernels_f = 0; ///< kernel launches per op, for the fixed overhead
  int kernels_b = 0;
  int kernels_w = 0;

  int64_t state_bytes() const { return param_bytes + grad_bytes + optimizer_bytes; }
};

/// A layer's work for a micro-batch of b samples.
struct layer_work {
  double f_flops = 0, b_flops = 0, w_flops = 0;
  double f_bytes = 0, b_bytes = 0, w_bytes = 0; ///< DRAM traffic including weights
  int64_t act_until_b = 0;
  int64_t act_until_w = 0;
};

layer_work work_at(const layer_spec& layer, int micro_batch);

/// A GPT-2-style decoder cut into L + 2 pipeline layers: 0 = embedding (wte, wpe),
/// 1..L = transformer blocks, L + 1 = head (ln_f, lm_head untied from wte, softmax
/// cross-entropy).
struct model_spec {
  std::string name;
  model_config config;
  std::vector<layer_spec> layers;

  int64_t total_params() const;
  int64_t total_state_bytes() const;

  /// One sample's activation at a stage boundary, [T, C] fp32; its gradient has the same
  /// size.
  int64_t boundary_bytes_per_sample() const;

  /// Bytes actually sent across a stage boundary for a micro-batch (forward activation or
  /// backward gradient): fp32; fp16/bf16 halves; int8 is one byte per value plus one fp32
  /// scale per row (token).
  int64_t transfer_bytes(int micro_batch, compression c) const;
};

/// A stage's figures on one device for one micro-batch: its layers' op seconds and
/// activation bytes summed (profile costs at the device's share of the samples).
struct stage_figures {
  double f_s = 0, b_s = 0, w_s = 0;
  double act_until_b = 0;   ///< kept from the end of F until B
  double act_until_w = 0;   ///< kept from the end of B until W
  double rebuilt_bytes = 0; ///< recomputation: rebuilt before B and held only while B runs
};

/// Bytes a recomputing stage keeps per micro-batch between F and B. It keeps its input:
/// the token ids [n, T] i32 on the stage with the embedding, else the previous stage's
/// activation [n, T, C] fp32. The stage with the head also keeps the targets [n, T] i32 its
/// B needs.
double recompute_kept_bytes(const model_spec& model, int first_layer, int last_layer, int samples);

/// THE rule of activation recomputation. The planner's estimate and memory check use it,
/// and so do the simulator and the runtime's virtual time (which takes the simulator's op
/// times). A recomputing stage keeps only recompute_kept_bytes between F and B instead of
/// its layers' act_until_b. Its B first runs the forward again: b_s + f_s. The input is
/// kept decoded, so no codec pass repeats. B holds the rebuilt activations (the rest of
/// act_until_b) while it runs. What B keeps for W is unchanged. Without recomputation the
/// figures stay as they are.
stage_figures with_recompute(const stage_figures& plain, bool recompute, const model_spec& model,
                             int first_layer, int last_layer, int samples);

/// Builds the spec; sizes must be positive and d_model divisible by n_head.
model_spec make_model_spec(const model_config& config, std::string name = "");

/// Named sizes: "small" (the CPU model of configs/single.toml), "gpt2-124m",
/// "gpt2-355m", "gpt2-774m", "gpt2-1.5b", "7b".
std::optional<model_config> model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

} // namespace deepcee::runtime
