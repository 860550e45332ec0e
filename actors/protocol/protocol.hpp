#pragma once

#include "actors/protocol/wire_format.hpp"
#include "messages/types.hpp"
#include "runtime/adapt/link_statistics.hpp"
#include "runtime/base/parameter_tensor.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/data/text_corpus.hpp"

#include <caf/actor_control_block.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

/// What the actors say to each other. Every message of the schema is its one struct of
/// messages/types.hpp, sent as it is; the `inspect` overloads below (found by ADL in
/// deepcee::messages) make CAF carry it between nodes as its validated Cap'n Proto bytes
/// (actors/wire_format.hpp), so adding a field touches the schema, the struct and its codec
/// and nothing here. The values defined here are CAF's alone: they hold actor handles or
/// pointers into local memory, or stay in the coordinator's process (runtime::link_report,
/// step_result). Times are virtual seconds (real seconds since the job started in wall mode).
namespace deepcee::actors {

// The schema's messages, by their names, in the actors' code.
using messages::deployment_request;
using messages::device_output;
using messages::device_rows;
using messages::error_report;
using messages::gradient_share;
using messages::gradient_values;
using messages::heartbeat;
using messages::job_deployment;
using messages::link_sample;
using messages::op_record;
using messages::optimize_order;
using messages::pipe_arrival;
using messages::pipe_request;
using messages::rebalance;
using messages::ring_chunk;
using messages::script_update;
using messages::send_horizon;
using messages::stage_report;
using messages::stage_snapshot;
using messages::step_start;

/// Which way a transfer goes; as a link_sample's kind it is the schema's TensorKind.
enum class tensor_role : int32_t { activation = 0, gradient = 1 };
static_assert(int(tensor_role::activation) == int(messages::tensor_kind::activation) &&
              int(tensor_role::gradient) == int(messages::tensor_kind::gradient));

/// An activation (forward, to the next stage) or its gradient (backward, to the previous
/// stage) of one whole micro-batch: the bytes of a Cap'n Proto Tensor message
/// (messages/codec.hpp) and nothing else. The sender's devices write the payload in place
/// (messages::tensor_draft), and the receiving stage decodes it once, in its handler, to
/// route by the validated header (kind, step, micro-batch, sender, arrival time), which
/// needs the stage's own step and neighbours; so it travels as bytes in a process too.
struct tensor_msg {
  std::vector<uint8_t> bytes;
  /// When CAF deserialized it from another process, on the steady clock (ns; not sent):
  /// its arrival, before it waits in the stage's mailbox. 0 within one process.
  int64_t arrived_ns = 0;
};

/// An active probe's message between two nodes' replanners (node_replanner.hpp): `bytes`
/// of filler, timed as a tensor_msg is, from its send to when CAF deserialized it.
struct probe_msg {
  std::vector<uint8_t> bytes;
  /// When CAF deserialized it from another process, on the steady clock (ns; not sent).
  int64_t arrived_ns = 0;
};

/// A probe round's messages on one node pair, in the order sent: each one's send on the
/// sender's clock and arrival on the receiver's (s since the job's epoch; NaN: no answer
/// within the bound).
struct probe_times {
  std::vector<double> send_s;
  std::vector<double> arrival_s;
};

/// A node of a multi-process job announcing its stage actors to the coordinator's node:
/// what the schema's NodeJoin says (its name, the cluster's fingerprint, its stages and
/// device slots), with the actor handles that go with them.
struct joining_node {
  messages::node_join join;
  std::vector<caf::strong_actor_ptr> handles; ///< one per join.stages entry
  caf::strong_actor_ptr heartbeat;            ///< the node's heartbeat actor (may be empty)
  /// The device actors of join.devices: its devices that serve stages of other nodes.
  std::vector<caf::strong_actor_ptr> device_handles;
  caf::strong_actor_ptr replanner; ///< spawns the node's part of a re-plan (node_replanner.hpp)
  std::string boot_id;             ///< the node's host boot (job_context::boot_id)
  double clock_error_s = 0;        ///< its clock against the coordinator's node's (job_context)
};

/// One decision of the adapter, as it logged it (adapter_actor.hpp): the step whose
/// observations led to it, its kind (runtime::decision_kind's name, or "ordered" for an
/// allocation asked with adapt_to), why, the predicted step times before and after, and the
/// step it takes effect at (-1: not applied, and `reason` says why).
struct adapt_record {
  int64_t sequence = 0; ///< 1 for the job's first decision, then counting
  int64_t step = 0;
  std::string kind;
  std::string reason;
  double old_step_s = 0;
  double new_step_s = 0;
  double predicted_gain = 1;
  int64_t effective_step = -1;
  messages::rebalance allocation; ///< what was ordered (empty on keep)
};

struct job_context;

/// A re-plan: the job runs `plan` (another layer partition, other stages or pipelines, the
/// same model and global batch) from step `effective_step` on. From the adapter (its policy,
/// or adapt_to) to the coordinator, which answers with the step it takes effect at; from the
/// coordinator back to the adapter once it is in force, with the job it runs now (`job`),
/// the bytes the stages moved and the virtual seconds the move took. It stays in the
/// coordinator's process, where the adapter runs too.
struct replan_order {
  runtime::plan plan;
  int64_t effective_step = 0;
  std::shared_ptr<job_context> job;
  double bytes = 0;
  double move_s = 0;
  /// A recovery's, or a spare's: the plan for the nodes there now (after a loss, or a
  /// join), which the adapter then comes back to in place of the job's first plan.
  bool survivors = false;
  /// A rollback's: the step of the complete snapshot the layers come from (-1: none, the
  /// layers come from the old stages as they are).
  int64_t from_snapshot = -1;
  /// The network the adapter priced the moves on (runtime::move_cluster), or none. Where the
  /// job's links are real, the coordinator picks each layer's sender and prices the move on
  /// it: the cluster's figures know nothing of a cut path.
  std::shared_ptr<const runtime::cluster> moves_on = nullptr;
};

/// The job the coordinator runs now (its plan, with a re-plan's once in force) and its
/// stages in flat order: what checkpoints, traces and the inspector read between steps.
struct job_in_force {
  std::shared_ptr<job_context> job;
  std::vector<caf::strong_actor_ptr> stages;
  runtime::plan plan; ///< that ran the last step: the job's, with any rebalance since
};

/// A re-plan's order to a new stage: take each of its layers (in order, from its first) from
/// the old stage named for it, as they are after `step` steps. CAF-serialized (it holds actor
/// handles), like stage_wiring.
struct layer_holders {
  std::vector<caf::strong_actor_ptr> stages;
  int64_t step = 0;
  /// A rollback's: each layer comes from a snapshot kept at `step` (the holder's own, or one
  /// it keeps for a stage on another node), not from the holder's weights.
  bool kept = false;
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
  /// Per node of a multi-process job: the actor that spawns its part of a re-plan
  /// (node_replanner.hpp); empty in one process.
  std::vector<caf::strong_actor_ptr> replanners;
  /// Per node of a multi-process job: its host's boot id ("" unknown; empty in one process).
  /// Shaped transfers between nodes of one boot are held by their receivers
  /// (runtime::shaping_side_of); the others wait on the sender's side.
  std::vector<std::string> boot_ids;
  /// Per node of a multi-process job: how far its clock may lie from the coordinator's
  /// node's (job_context::clock_error_s; empty in one process).
  std::vector<double> clock_errors;
  /// The coordinator's node's heartbeat actor (empty in one process): told when a re-plan's
  /// moves start and end.
  caf::strong_actor_ptr heartbeat;
};

/// A finished step as the coordinator reports it.
/// A device's all-reduce bucket ("allreduce L2-5") or optimizer step ("optimizer") as the
/// emulated cluster times it; device -1: the whole job's all-reduce and optimizer as they
/// really took (wall mode, where no device's share is known).
struct finish_span {
  std::string name;
  int32_t device = -1;
  double start_s = 0;
  double end_s = 0;
};

struct step_result {
  int64_t step = 0;
  double loss = 0;
  double grad_norm = 0;
  double lr = 0;
  double start_s = 0;                   ///< virtual (real in wall mode)
  double end_s = 0;                     ///< after all-reduce and optimizer
  double compute_end_s = 0;             ///< the last stage's last op
  std::vector<messages::op_record> ops; ///< all stages, flat order given by op_stage
  std::vector<int32_t> op_stage;        ///< flat stage index of each op
  int64_t dropped = 0;                  ///< malformed messages the stages dropped so far
  std::vector<finish_span> finish;      ///< after compute_end_s, until end_s
  /// The events that took effect at this step's start, as one script_update of this step
  /// (none, or one): the job's own step events of this step, then those injected into it
  /// (`deepcee inject`).
  std::vector<messages::script_update> injected;
  /// After a rollback: the losses of the steps replayed from the snapshot's before this one,
  /// oldest first (the snapshot's step + 1 on).
  std::vector<double> replayed;
};

/// One op (runtime::op_kind) on some samples of a micro-batch: from the stage to its group
/// (the whole micro-batch), and from the group to each device (its rows). The spans point
/// where the tensors lie, kept alive by the owners: the received message's payload, the
/// payload of the message being written (the devices write their rows there, disjoint), the
/// step's batch of tokens. No copy is made on the way. A device on another node gets a
/// messages::device_rows instead (actors/remote_device.hpp).
struct device_work {
  int32_t kind = 0;
  int32_t micro = 0;
  int32_t first_sample = 0; ///< in the global batch
  int32_t samples = 0;
  float loss_scale = 0;   ///< the last stage's F: 1 / tokens of the global batch
  bool recompute = false; ///< F: keep only the input until B, which runs F again first
  std::shared_ptr<const runtime::token_batch> batch; ///< first and last stages
  std::shared_ptr<const void> input_owner;
  std::span<const float> input; ///< [samples, T, C], or empty
  std::shared_ptr<void> output_owner;
  std::span<float> output; ///< [samples, T, C], or empty
};

/// A device's gradient tensors where they lie (its GPU's memory), written and synchronized:
/// the group's NCCL all-reduce sums them in place.
struct device_buffers {
  std::vector<std::span<float>> buffers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tensor_msg& x) {
  return f(caf::meta::type_name("tensor_msg"), x.bytes, caf::meta::load_callback([&x] {
             x.arrived_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
             return caf::error{};
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, probe_msg& x) {
  return f(caf::meta::type_name("probe_msg"), x.bytes, caf::meta::load_callback([&x] {
             x.arrived_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
             return caf::error{};
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, probe_times& x) {
  return f(caf::meta::type_name("probe_times"), x.send_s, x.arrival_s);
}

/// The join as its Cap'n Proto bytes; the handles CAF-serialized beside them.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, joining_node& x) {
  return f(caf::meta::type_name("joining_node"), x.join, x.handles, x.heartbeat, x.device_handles,
           x.replanner, x.boot_id, x.clock_error_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapt_record& x) {
  return f(caf::meta::type_name("adapt_record"), x.sequence, x.step, x.kind, x.reason, x.old_step_s,
           x.new_step_s, x.predicted_gain, x.effective_step, x.allocation);
}

/// Actor handles only: CAF's own addressing, CAF-serialized.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, layer_holders& x) {
  return f(caf::meta::type_name("layer_holders"), x.stages, x.step, x.kept);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_wiring& x) {
  return f(caf::meta::type_name("stage_wiring"), x.stages, x.coordinator, x.adapter, x.pipes,
           x.devices, x.replanners, x.boot_ids, x.clock_errors, x.heartbeat);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finish_span& x) {
  return f(caf::meta::type_name("finish_span"), x.name, x.device, x.start_s, x.end_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
  return f(caf::meta::type_name("step_result"), x.step, x.loss, x.grad_norm, x.lr, x.start_s,
           x.end_s, x.compute_end_s, x.ops, x.op_stage, x.dropped, x.finish, x.injected,
           x.replayed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_work& x) {
  return inspect_in_process(f, x, "device_work");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_buffers& x) {
  return inspect_in_process(f, x, "device_buffers");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replan_order& x) {
  return inspect_in_process(f, x, "replan_order");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_in_force& x) {
  return inspect_in_process(f, x, "job_in_force");
}

} // namespace deepcee::actors

/// A parameter's host copy crosses actors alone only within a process (a device's snapshot
/// to its stage); between nodes it travels inside a stage_snapshot.
namespace deepcee::runtime {

/// The adapter's view of a link, for the inspector in the coordinator's process.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_report& x) {
  return actors::inspect_in_process(f, x, "link_report");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, parameter_tensor& x) {
  return f(caf::meta::type_name("parameter_tensor"), x.name, x.shape, x.value, x.exp_avg,
           x.exp_avg_sq);
}

} // namespace deepcee::runtime

/// The messages of the schema have their `inspect` in wire_format.hpp, made from the list of
/// messages; op_record, a part of one, has its own here.
namespace deepcee::messages {

/// Only inside a step_result, which stays in the coordinator's process (a stage_report
/// carries its op records as part of its own Cap'n Proto message).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_record& x) {
  return f(caf::meta::type_name("op_record"), x.kind, x.micro_batch, x.start, x.end);
}

} // namespace deepcee::messages
