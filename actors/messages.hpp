#pragma once

#include "actors/wire_format.hpp"

#include <caf/actor_control_block.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

/// The values the actors exchange. Plain structs with CAF `inspect`; those that can cross a
/// node cross it as Cap'n Proto bytes validated on load (actors/wire_format.hpp). The rest
/// (op_record inside a report, link_summary, step_result) stay in the coordinator's
/// process. Times are virtual seconds (real seconds since the job started in wall mode).
namespace deepcee::actors {

enum class tensor_role : int32_t { activation = 0, gradient = 1 };

/// Starts step `step` on a stage: the virtual time it starts at and each pipeline's
/// micro-batch count (the adapter's rebalance will change them at step boundaries).
struct step_order {
  int64_t step = 0;
  double start_s = 0;
  std::vector<int32_t> micro_batches;
};

/// An activation (forward, to the next stage) or its gradient (backward, to the previous
/// stage) of one whole micro-batch: values [b, T, C] in sample order, as the bytes of a
/// Cap'n Proto tensor message (messages/codec.hpp) and nothing else: the receiving stage
/// decodes them once, in its handler, and routes by the validated header (kind, step,
/// micro-batch, sender, arrival time), which needs the stage's own step and neighbours.
struct tensor_msg {
  std::vector<uint8_t> bytes;
};

/// A stage's gradient sum (over its devices) of layers [first_layer, last_layer), the
/// parameters of each layer in model order: one contribution to the all-reduce.
struct grad_share {
  int64_t step = 0;
  int32_t pipeline = 0;
  int32_t stage = 0;
  int32_t first_layer = 0;
  int32_t last_layer = 0;
  std::vector<float> values;
};

/// One executed op of a stage, in virtual time (the trace's events).
struct op_record {
  int32_t kind = 0; ///< runtime::op_kind
  int32_t micro = 0;
  double start_s = 0;
  double end_s = 0;
};

/// A stage's step, once its gradients are reduced. `error` is set instead when a handler
/// failed; the coordinator then fails the step with it.
struct stage_report {
  int64_t step = 0;
  int32_t pipeline = 0;
  int32_t stage = 0;
  double end_s = 0;            ///< its last op's end
  double loss_sum = 0;         ///< last stages: sum of per-token losses
  double grad_sum_squares = 0; ///< pipeline 0's stages: of the reduced gradients
  std::vector<op_record> ops;
  int64_t dropped = 0; ///< malformed messages this stage dropped so far
  std::string error;
};

/// The optimizer step after the all-reduce: every device of every stage steps with the
/// global gradient norm (clipping) at the step's learning rate.
struct optimize_order {
  int64_t step = 0;
  double lr = 0;
  double grad_norm = 0;
};

/// One transfer on one link, recorded on the send path.
struct link_sample {
  int64_t step = 0;
  int32_t role = 0; ///< tensor_role
  int32_t micro = 0;
  int32_t pipeline = 0;
  int32_t stage = 0; ///< the sender
  int32_t from_device = 0;
  int32_t to_device = 0;
  int32_t link = 0; ///< the FIFO resource (device pair, or WAN pipe between regions)
  double bytes = 0; ///< as sent (compression counted)
  double send_s = 0;
  double start_s = 0;
  double drained_s = 0;
  double arrival_s = 0;
};

/// What the adapter knows about one link.
struct link_summary {
  int32_t link = 0;
  int32_t from_device = 0; ///< of its first transfer
  int32_t to_device = 0;
  int64_t transfers = 0;
  double bytes = 0;
  double busy_s = 0;        ///< sum of drain times
  double mean_delay_s = 0;  ///< mean of arrival - send (queueing included)
  double bandwidth_Bps = 0; ///< bytes / busy_s as observed
};

/// "This node is alive", sent by every node to the coordinator's node and back every
/// heartbeat interval (actors/heartbeat_actor.hpp).
struct heartbeat {
  std::string node;
  uint64_t sequence = 0;
  double time_s = 0; ///< wall seconds since the sender started beating
};

/// Handles of a stage's peers, sent once after every actor exists (stages name each other).
struct stage_wiring {
  std::vector<caf::strong_actor_ptr> stages; ///< flat: pipeline by pipeline, stage by stage
  caf::strong_actor_ptr coordinator;
  caf::strong_actor_ptr adapter;
  std::vector<caf::strong_actor_ptr> pipes; ///< one per runtime::shared_links() entry
  /// Per device slot (runtime::node_layout::slot): the device actor of a stage's device that
  /// runs on another node than its stage; empty for the others (the group spawns them).
  std::vector<caf::strong_actor_ptr> devices;
};

/// A finished step as the coordinator reports it.
struct step_result {
  int64_t step = 0;
  double loss = 0;
  double grad_norm = 0;
  double lr = 0;
  double start_s = 0;            ///< virtual (real in wall mode)
  double end_s = 0;              ///< after all-reduce and optimizer
  double compute_end_s = 0;      ///< the last stage's last op
  std::vector<op_record> ops;    ///< all stages, flat order given by op_stage
  std::vector<int32_t> op_stage; ///< flat stage index of each op
  int64_t dropped = 0;           ///< malformed messages the stages dropped so far
};

/// A node of a multi-process job announces its stage actors to the coordinator's node.
/// `job` fingerprints the cluster as the node read it (runtime::cluster_fingerprint), so a
/// node started with another cluster is refused instead of computing something else (the
/// plan and training settings it runs came from the coordinator's node: job_deployment).
struct node_join {
  std::string node;
  std::string job;
  std::vector<int32_t> stages; ///< flat indices
  std::vector<caf::strong_actor_ptr> handles;
  caf::strong_actor_ptr heartbeat; ///< the node's heartbeat actor (may be empty)
  /// The node's devices that belong to stages of other nodes: their device slots
  /// (runtime::node_layout::slot) and their device actors.
  std::vector<int32_t> devices;
  std::vector<caf::strong_actor_ptr> device_handles;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_join& x) {
  return inspect_as_wire(f, x, "node_join", x.handles, x.heartbeat, x.device_handles);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_order& x) {
  return inspect_as_wire(f, x, "step_order");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tensor_msg& x) {
  return f(caf::meta::type_name("tensor_msg"), x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, grad_share& x) {
  return inspect_as_wire(f, x, "grad_share");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_record& x) {
  return f(caf::meta::type_name("op_record"), x.kind, x.micro, x.start_s, x.end_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_report& x) {
  return inspect_as_wire(f, x, "stage_report");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optimize_order& x) {
  return inspect_as_wire(f, x, "optimize_order");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_sample& x) {
  return inspect_as_wire(f, x, "link_sample");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_summary& x) {
  return f(caf::meta::type_name("link_summary"), x.link, x.from_device, x.to_device, x.transfers,
           x.bytes, x.busy_s, x.mean_delay_s, x.bandwidth_Bps);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat& x) {
  return inspect_as_wire(f, x, "heartbeat");
}

/// Actor handles only: CAF's own addressing, CAF-serialized.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_wiring& x) {
  return f(caf::meta::type_name("stage_wiring"), x.stages, x.coordinator, x.adapter, x.pipes,
           x.devices);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
  return f(caf::meta::type_name("step_result"), x.step, x.loss, x.grad_norm, x.lr, x.start_s,
           x.end_s, x.compute_end_s, x.ops, x.op_stage, x.dropped);
}

} // namespace deepcee::actors
