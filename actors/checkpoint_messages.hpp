#pragma once

#include "actors/wire_format.hpp"
#include "kernels/gpt/checkpoint.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

/// What moves between the coordinator's side and the stages for checkpoints: a stage's
/// layers (weights and AdamW moments) out after a step, and back in on resume. Host copies;
/// a stage_snapshot crosses nodes as one validated Cap'n Proto message (wire_format.hpp).
/// parameter_state alone never crosses a node: its CAF inspect serves in-process use.
namespace deepcee::kernels {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, parameter_state& x) {
  return f(caf::meta::type_name("parameter_state"), x.name, x.shape, x.value, x.exp_avg,
           x.exp_avg_sq);
}

} // namespace deepcee::kernels

namespace deepcee::actors {

/// The weights and moments of the layers of one stage, in model order, after `step`
/// optimizer steps (a snapshot), or to load before step `step + 1` (a restore).
struct stage_snapshot {
  int64_t step = 0;
  int32_t pipeline = 0;
  int32_t stage = 0;
  std::vector<kernels::parameter_state> params;
  std::string source; ///< restore: the checkpoint file, named by errors
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_snapshot& x) {
  return inspect_as_wire(f, x, "stage_snapshot");
}

} // namespace deepcee::actors
