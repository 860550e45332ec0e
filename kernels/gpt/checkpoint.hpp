#pragma once

#include "kernels/gpt/adamw.hpp"
#include "kernels/gpt/gpt_model.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace deepcee::kernels {

/// What a checkpoint says besides its tensors.
struct checkpoint_info {
  int step = 0;  ///< optimizer steps completed
  runtime::model_config model;
  uint64_t seed = 0;
};

/// Writes weights (Hugging Face GPT-2 names), AdamW moments
/// ("optimizer.exp_avg.NAME", "optimizer.exp_avg_sq.NAME") and the step as a safetensors
/// file, atomically (temporary file, then rename).
void save_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                     adamw* optimizer, const checkpoint_info& info);

/// Reads the metadata alone (to build a model of the right size before loading).
checkpoint_info read_checkpoint_info(const std::filesystem::path& path);

/// Loads weights (and moments, when `optimizer` is given) into a model of the same
/// sizes. A missing tensor or a shape that differs is an input_error naming the file and
/// the tensor; nothing is changed unless every tensor matches.
checkpoint_info load_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                                adamw* optimizer);

} // namespace deepcee::kernels
