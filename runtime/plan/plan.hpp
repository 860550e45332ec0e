#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/base/train_config.hpp"
#include "runtime/schedule/schedule.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// One pipeline stage: a contiguous range [first_layer, last_layer) of the model's
/// pipeline layers (0 = embedding, 1..n_layer = blocks, n_layer + 1 = head) held by a set
/// of devices that split every micro-batch by samples (intra-stage data parallelism).
struct stage_plan {
  std::vector<int> devices; ///< cluster device ids
  std::vector<int> samples; ///< samples of each micro-batch per device; sum = micro_batch_size
  int first_layer = 0;
  int last_layer = 0;
  /// Encoding of the activations this stage sends to the next stage and of the gradients
  /// it receives back (compression of transfers that cross slow links).
  compression send_compression = compression::none;
  /// Activation recomputation, which trades compute for memory. Between F and B each device
  /// keeps only the stage's input of a micro-batch, and what its B needs beyond it. It runs
  /// the forward again right before B to rebuild the rest. stage_op_costs in
  /// runtime/base/model_spec.hpp prices it.
  bool recompute = false;
};

/// A pipeline runs `micro_batches` micro-batches per step through its stages, in the
/// order its schedule gives.
struct pipeline_plan {
  std::vector<stage_plan> stages;
  int micro_batches = 1; ///< m_p
  schedule_kind schedule = schedule_kind::one_f_one_b;
};

struct excluded_device {
  int device = 0;
  std::string reason; ///< e.g. "link to cloud 100 Mbps cannot feed it", "2.1 GiB free < 3.4 GiB"
};

/// A whole strategy: P >= 1 pipelines over the cluster. Each pipeline covers every layer;
/// the global batch is sum over pipelines of micro_batches * micro_batch_size. Gradients
/// of each layer are all-reduced over every device that holds the layer, weighted by the
/// samples it processed. Value type; written and read as JSON (the runtime reads it).
struct plan {
  std::string strategy;   ///< "deepcee", "dp", "gpipe", "megatron", "metis"
  std::string model_name; ///< preset name or "custom"
  model_config model;
  int micro_batch_size = 1; ///< b
  std::vector<pipeline_plan> pipelines;
  std::vector<excluded_device> excluded;

  int global_batch() const;
};

/// Rows between the devices of neighbouring stages: each stage's devices hold consecutive
/// sample ranges in device order, so device `from` of one stage sends device `to` of the
/// other the overlap of their ranges (`samples` samples). Indices are places in the stages'
/// device lists; pairs without overlap are left out.
struct rows_pair {
  size_t from = 0;
  size_t to = 0;
  int samples = 0;
};
std::vector<rows_pair> rows_between(const std::vector<int>& from_samples,
                                    const std::vector<int>& to_samples);

/// Structural checks against a model and a cluster size: every pipeline covers layers
/// [0, n_layer + 2) with contiguous stages, shares sum to the micro-batch size, device ids
/// exist and no device serves two stages. Throws input_error naming `source`.
void validate_plan(const plan& p, int device_count, const std::filesystem::path& source);

} // namespace deepcee::runtime
