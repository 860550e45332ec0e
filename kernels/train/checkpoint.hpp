#pragma once

#include "kernels/gpt/gpt_model.hpp"
#include "kernels/optim/adamw.hpp"
#include "runtime/base/parameter_tensor.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace deepcee::kernels {

/// What a checkpoint says besides its tensors.
struct checkpoint_info {
  int step = 0; ///< optimizer steps completed
  runtime::model_config model;
  uint64_t seed = 0;
  /// A virtual-time job's clock after `step` (seconds): a resumed run starts there, so its
  /// step times are the uninterrupted run's bit for bit. 0 where there is none (deepcee
  /// train, wall time, files without it).
  double clock_s = 0;
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

/// One parameter and its AdamW moments as host copies: what the actor runtime gathers from
/// the stages that hold it, and what it sends them back on resume.
using parameter_state = runtime::parameter_tensor;

/// Writes the same file as save_checkpoint from host copies; `params` in model order, each
/// with both moments. Atomic (temporary file, then rename).
void save_checkpoint(const std::filesystem::path& path, const std::vector<parameter_state>& params,
                     const checkpoint_info& info);

/// A checkpoint as host copies: its metadata and every parameter (names not starting with
/// "optimizer."), in file order, with their moments when the file has them. A moment
/// without its parameter, or a parameter with only one moment, is an input_error.
struct checkpoint_contents {
  checkpoint_info info;
  std::vector<parameter_state> params;
};
checkpoint_contents read_checkpoint(const std::filesystem::path& path);

/// Throws input_error naming `path` when the checkpoint's model sizes differ from `model`.
void require_same_model(const std::filesystem::path& path, const checkpoint_info& info,
                        const runtime::model_config& model);

/// Copies host states into a model's parameters (and `optimizer`'s moments when given).
/// Every parameter of the model must be there with its shape (and moments): otherwise an
/// input_error naming `source` and the tensor, and nothing is changed.
void load_parameter_states(const std::vector<parameter_state>& states, backend& be,
                           gpt_model& model, adamw* optimizer, const std::filesystem::path& source);

} // namespace deepcee::kernels
