#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// One parameter and its AdamW moments as host copies: what a checkpoint gathers from the
/// devices that hold it and sends them back on resume. The moments are both empty (a
/// checkpoint file without them) or both as long as `value`. Defined here, below kernels/
/// and messages/, so that the trainer's host copy (kernels::parameter_state) and the
/// message that carries it between nodes (messages::parameter_tensor) are one struct.
struct parameter_tensor {
  std::string name; ///< Hugging Face GPT-2 name
  std::vector<int64_t> shape;
  std::vector<float> value, exp_avg, exp_avg_sq;
  friend bool operator==(const parameter_tensor&, const parameter_tensor&) = default;
};

} // namespace deepcee::runtime
