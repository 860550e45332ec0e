#pragma once

#include "actors/wire_format.hpp"
#include "runtime/text_corpus.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

/// What a stage, its group actor and its device actors say to each other. The stage and its
/// group live in one process, and so do the devices on the stage's node: device_work and
/// device_buffers point into local memory, so their CAF inspect refuses to serialize them
/// (inspect_in_process). A device on another node (remote_device.hpp) gets its rows in a
/// device_rows and answers with a device_output; it and the devices of its ring exchange
/// ring_chunk and gradient_values: these four cross nodes as Cap'n Proto bytes
/// (wire_format.hpp).
namespace deepcee::actors {

/// One op (runtime::op_kind) on some samples of a micro-batch: from the stage to its group
/// (the whole micro-batch), and from the group to each device (its rows). The spans point
/// where the tensors lie, kept alive by the owners: the received message's payload, the
/// payload of the message being written (the devices write their rows there, disjoint), the
/// step's batch of tokens. No copy is made on the way.
struct device_work {
  int32_t kind = 0;
  int32_t micro = 0;
  int32_t first_sample = 0; ///< in the global batch
  int32_t samples = 0;
  float loss_scale = 0; ///< the last stage's F: 1 / tokens of the global batch
  std::shared_ptr<const runtime::token_batch> batch; ///< first and last stages
  std::shared_ptr<const void> input_owner;
  std::span<const float> input; ///< [samples, T, C], or empty
  std::shared_ptr<void> output_owner;
  std::span<float> output; ///< [samples, T, C], or empty
};

/// device_work for a device on another node than its stage: the rows it reads travel in the
/// message (the tokens and targets of its samples when the stage needs them), and what it
/// writes comes back in a device_output.
struct device_rows {
  int32_t kind = 0; ///< runtime::op_kind
  int32_t micro = 0;
  int32_t first_sample = 0; ///< in the global batch
  int32_t samples = 0;
  float loss_scale = 0;
  std::vector<int32_t> tokens;  ///< the first stage's F: [samples, T], else empty
  std::vector<int32_t> targets; ///< the last stage's F: [samples, T], else empty
  std::vector<float> input;     ///< [samples, T, C], or empty
  int64_t output_values = 0;    ///< what the answer carries: samples * T * C, or 0
};

/// A device_rows' answer: the last stage's F loss sum (else 0) and the rows written.
struct device_output {
  double loss = 0;
  std::vector<float> output;
};

/// One round of a ring all-reduce of a stage's gradients, from a device to the next one
/// (runtime::ring_allreduce).
struct ring_chunk {
  int64_t step = 0;
  int32_t round = 0;
  std::vector<float> values;
};

/// A device's gradient tensors where they lie (its GPU's memory), written and synchronized:
/// the group's NCCL all-reduce sums them in place.
struct device_buffers {
  std::vector<std::span<float>> buffers;
};

/// Gradients to set on every device of a stage (the all-reduce's result across pipelines);
/// also a device's answer to `reduce` (the sums on rank 0, empty values on the others).
/// `offset`: where the values begin among the stage's gradients, when a stage too large for
/// one message between nodes sends them to a device there in pieces (in order; the device
/// sets them once all are there).
struct gradient_values {
  int64_t step = 0;
  std::vector<float> values;
  int64_t offset = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_work& x) {
  return inspect_in_process(f, x, "device_work");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_rows& x) {
  return inspect_as_wire(f, x, "device_rows");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_output& x) {
  return inspect_as_wire(f, x, "device_output");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_chunk& x) {
  return inspect_as_wire(f, x, "ring_chunk");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_buffers& x) {
  return inspect_in_process(f, x, "device_buffers");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gradient_values& x) {
  return inspect_as_wire(f, x, "gradient_values");
}

} // namespace deepcee::actors
