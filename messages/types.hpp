#pragma once

#include "messages/message_list.hpp"
#include "messages/tensor_codec.hpp"
#include "runtime/base/parameter_tensor.hpp"
#include "runtime/base/train_config.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/plan/plan.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

/// The value types that cross actors and node boundaries, one per Cap'n Proto message of
/// messages/deepcee.capnp, named and laid out as the schema names them. Plain copyable
/// structs: the actors send them as they are within a process, and messages/codec.hpp turns
/// them into bytes and back between processes (the actors' CAF `inspect` calls it; see
/// actors/protocol.hpp). Adding a field touches the schema, the struct and its codec.
/// Times are seconds (virtual, or wall since the job began); device ids are the cluster's.
namespace deepcee::messages {

/// Which member of the schema's Envelope a message is: one per entry of message_list.hpp, in
/// the union's order, so a kind's value is its member's discriminant.
enum class message_kind : uint8_t {
#define DEEPCEE_KIND_ENUMERATOR(type, kind, schema) kind,
  DEEPCEE_WIRE_MESSAGES(DEEPCEE_KIND_ENUMERATOR)
#undef DEEPCEE_KIND_ENUMERATOR
};

std::string_view to_string(message_kind k);

/// How time passes in a job: the runtime's own enum, which the schema's TimeMode mirrors.
using runtime::time_mode;
enum class tensor_kind : uint8_t { activation, gradient, gradient_share };
/// Why something failed, as the schema's ErrorCode says: what a failure that crosses actors
/// carries beside its one line of context (actors/errors.hpp makes it a caf::error).
enum class error_code : uint8_t { internal, malformed_message, bad_input, peer_down, timeout };

/// What a node needs to run its part of a job. `train.model` always equals `plan.model`
/// after decoding: the plan's model is the one that runs, so it travels once.
struct job_deployment {
  std::string job;
  std::string node; ///< the node this deployment is addressed to
  time_mode mode = time_mode::virtual_time;
  runtime::plan plan;
  runtime::train_config train;
  bool shape_links = false; ///< wall time: senders wait as the cluster's link model says
  double clock_s = 0;       ///< the coordinator's wall clock as it answered (>= 0)
  /// The job runs already, `plan` being the plan in force: a node that it leaves out joins
  /// as a spare, which a later re-plan may use.
  bool running = false;
  /// The coordinator's node's host boot and its job's zero on that boot's steady clock (ns):
  /// a node of the same boot (one host) takes that zero exactly instead of `clock_s`.
  std::string boot_id;
  int64_t epoch_ns = 0;
};

/// A node asking the coordinator's node for its job_deployment; `cluster` fingerprints the
/// cluster as the node read it (runtime::cluster_fingerprint).
struct deployment_request {
  std::string node;
  std::string cluster;
  friend bool operator==(const deployment_request&, const deployment_request&) = default;
};

/// Starts step `step` on a stage: the time it starts at and each pipeline's micro-batch
/// count (the adapter's rebalance changes them at step boundaries).
struct step_start {
  int64_t step = 0;
  std::vector<int> micro_batches; ///< per pipeline
  double learning_rate = 0.0;
  double start_time = 0.0;
  friend bool operator==(const step_start&, const step_start&) = default;
};

/// The optimizer step after the all-reduce: every device of every stage steps with the
/// global gradient norm (clipping) at the step's learning rate.
struct optimize_order {
  int64_t step = 0;
  double learning_rate = 0.0;
  double grad_norm = 0.0;
  friend bool operator==(const optimize_order&, const optimize_order&) = default;
};

/// A transfer part put on a shared link, a sender's promise about its next sends, and a
/// shared link's verdict on when a part arrives (actors/pipe_actor.hpp). `role` is 0 for
/// activations, 1 for gradients.
struct pipe_request {
  int64_t step = 0;
  int role = 0;
  int pipeline = 0;
  int stage = 0;
  int micro_batch = 0;
  int part = 0;
  double send_time = 0.0;
  friend bool operator==(const pipe_request&, const pipe_request&) = default;
};

struct send_horizon {
  int64_t step = 0;
  double time = 0.0; ///< finite; may be the lowest double ("nothing before this step")
  int pipeline = 0;
  int stage = 0;
  int role = 0; ///< -1: every role (a promise to a pipe)
  friend bool operator==(const send_horizon&, const send_horizon&) = default;
};

struct pipe_arrival {
  int64_t step = 0;
  int role = 0;
  int pipeline = 0;
  int stage = 0;
  int micro_batch = 0;
  double arrival_time = 0.0;
  friend bool operator==(const pipe_arrival&, const pipe_arrival&) = default;
};

/// One parameter and its AdamW moments: the runtime's host copy (the trainer's
/// kernels::parameter_state too), so a snapshot needs no conversion on either side.
using runtime::parameter_tensor;

/// A stage's layers after `step` optimizer steps, or to load before step `step + 1`.
struct stage_snapshot {
  int64_t step = 0;
  int pipeline = 0;
  int stage = 0;
  std::vector<parameter_tensor> params; ///< in model order
  std::string source;                   ///< restore: the checkpoint file
  friend bool operator==(const stage_snapshot&, const stage_snapshot&) = default;
};

/// Everything about an activation or gradient except its bytes.
struct tensor_header {
  tensor_kind kind = tensor_kind::activation;
  int64_t step = 0;
  int micro_batch = 0;
  int pipeline = 0;
  int stage = 0;        ///< the sending stage
  int first_sample = 0; ///< offset of this slice within the micro-batch
  double send_time = 0.0;
  std::vector<int64_t> shape; ///< of the fp32 tensor; rows = all dims but the last
  tensor_dtype dtype = tensor_dtype::f32;
  double arrival_time = 0.0; ///< when its last part arrives (the sender's link model)
  int first_layer = 0;       ///< gradient_share only: its layers [first_layer, last_layer)
  int last_layer = 0;
  /// Shaped wall time, sender and receiver on one host: the modelled arrival on their shared
  /// steady clock (ns since its epoch), until which the receiver holds it; 0: none.
  int64_t deliver_at_ns = 0;

  int64_t rows() const;
  int64_t cols() const;
  friend bool operator==(const tensor_header&, const tensor_header&) = default;
};

/// The bytes behind a decoded message, kept alive by whoever holds a copy of `owner`.
struct received_buffer {
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> bytes;
};

/// An activation or gradient with its payload (encoded as header.dtype says) seen as a
/// view, never copied:
/// - to send, point `payload` at the host bytes; `encode` copies them once, into the
///   wire buffer (encode_tensor compresses fp32 values straight into it instead);
/// - after `decode_tensor`, `payload` points into `buffer`, the aligned copy of the
///   received bytes (or the received vector itself, adopted when it was aligned), which
///   every copy of this struct shares; upload from the view, then drop the struct.
struct tensor_message {
  tensor_header header;
  std::span<const uint8_t> payload;
  received_buffer buffer; ///< empty on the sending side
};

/// One transfer on one link: queued at send_time, draining from `start` to `drained`,
/// all arrived at `end`. `bytes` as the link model splits a transfer (fractions of a byte
/// within a process); the wire carries it rounded, since a link carries whole bytes.
struct link_sample {
  int from = 0;
  int to = 0;
  double bytes = 0;
  double start = 0.0;
  double end = 0.0;
  int64_t step = 0;
  tensor_kind kind = tensor_kind::activation;
  int micro_batch = 0;
  int pipeline = 0;
  int stage = 0; ///< the sender
  int link = 0;  ///< the FIFO resource
  double send_time = 0.0;
  double drained = 0.0;
  friend bool operator==(const link_sample&, const link_sample&) = default;
};

struct stage_stats {
  int pipeline = 0;
  int stage = 0;
  double compute_busy = 0.0;
  double idle = 0.0;
  int64_t bytes_sent = 0;
  int64_t peak_memory = 0;
  double loss_sum = 0.0;   ///< last stage only
  int64_t token_count = 0; ///< last stage only
  friend bool operator==(const stage_stats&, const stage_stats&) = default;
};

/// One executed op of a stage (the trace's events).
struct op_record {
  int kind = 0; ///< runtime::op_kind
  int micro_batch = 0;
  double start = 0.0;
  double end = 0.0;
  friend bool operator==(const op_record&, const op_record&) = default;
};

/// A stage's step, once its gradients are reduced, or (error set) its failure: `code` says
/// what kind, `error` the one line that names the stage and the cause.
struct stage_report {
  int64_t step = 0;
  int pipeline = 0;
  int stage = 0;
  double end_time = 0.0;
  double loss_sum = 0.0;
  double grad_sum_squares = 0.0;
  std::vector<op_record> ops;
  int64_t dropped = 0;                    ///< malformed messages the stage dropped so far
  std::string error;                      ///< one line; empty unless the stage failed
  error_code code = error_code::internal; ///< with `error`
  friend bool operator==(const stage_report&, const stage_report&) = default;
};

/// A node announcing its stages (flat indices) under its cluster's fingerprint (`job`), and
/// the device slots of its devices that serve stages of other nodes.
struct node_join {
  std::string node;
  std::string job;
  std::vector<int> stages;
  std::vector<int> devices;
  friend bool operator==(const node_join&, const node_join&) = default;
};

struct step_stats {
  int64_t step = 0;
  std::vector<stage_stats> stages;
  friend bool operator==(const step_stats&, const step_stats&) = default;
};

/// The allocation a job runs from step `effective_step` on (runtime::plan_allocation): each
/// pipeline's micro-batches (their sum times the micro-batch size, the global batch, is
/// unchanged), each stage's samples per device and each stage's send compression, stages in
/// flat order. Empty `samples` or `compressions`: the plan's. The coordinator sends it to
/// every stage before that step's step_start, and each stage to its device group.
struct rebalance {
  std::vector<int> micro_batches; ///< per pipeline
  int64_t effective_step = 0;
  std::vector<std::vector<int>> samples;          ///< per flat stage, per device
  std::vector<runtime::compression> compressions; ///< per flat stage
  friend bool operator==(const rebalance&, const rebalance&) = default;
};

/// "This node is alive", sent by every node to the coordinator's node and back every
/// heartbeat interval (actors/heartbeat_actor.hpp); `time`: wall seconds since the sender
/// started beating.
struct heartbeat {
  std::string node;
  uint64_t sequence = 0;
  double time = 0.0;
  friend bool operator==(const heartbeat&, const heartbeat&) = default;
};

/// A node telling the coordinator's node that it cannot run the job (it refused the
/// deployment: its data does not load, the plan does not fit its cluster...), so that the
/// job stops at once, naming it, instead of at the connect timeout.
struct error_report {
  std::string node;
  error_code code = error_code::internal;
  std::string message; ///< one line
  friend bool operator==(const error_report&, const error_report&) = default;
};

/// A stage's gradient sum (over its devices) of layers [first_layer, last_layer), the
/// parameters of each layer in model order: one contribution to the all-reduce across
/// pipelines. It crosses as a Tensor message of kind gradientShare (f32, never compressed:
/// gradient sums are reduced exactly).
struct gradient_share {
  int64_t step = 0;
  int pipeline = 0;
  int stage = 0;
  int first_layer = 0;
  int last_layer = 0;
  std::vector<float> values;
  int64_t deliver_at_ns = 0; ///< as tensor_header's
  friend bool operator==(const gradient_share&, const gradient_share&) = default;
};

/// A stage's device on another node than its stage (actors/remote_device.hpp): one op on
/// `samples` samples of a micro-batch, with the rows it reads. Every row field holds a
/// whole number of rows (a multiple of `samples` values), or nothing.
struct device_rows {
  int kind = 0; ///< runtime::op_kind: 0..2
  int micro_batch = 0;
  int first_sample = 0; ///< in the global batch
  int samples = 0;      ///< at least 1
  float loss_scale = 0.0f;
  std::vector<int32_t> tokens;  ///< the first stage's F: [samples, T], else empty
  std::vector<int32_t> targets; ///< the last stage's F: [samples, T], else empty
  std::vector<float> input;     ///< [samples, T, C], or empty
  int64_t output_values = 0;    ///< what the answer carries: samples * T * C, or 0
  bool recompute = false;       ///< F: keep only the input until B (activation recomputation)
  friend bool operator==(const device_rows&, const device_rows&) = default;
};

/// A device_rows' answer: the last stage's F loss sum (else 0; non-finite when the run
/// diverged) and the rows written.
struct device_output {
  double loss = 0.0;
  std::vector<float> output;
  /// Seconds the device computed the op (a duration of its own clock): the stage's side
  /// tells the messages' real time from it (shaped wall time's round trip).
  double compute_s = 0.0;
  friend bool operator==(const device_output&, const device_output&) = default;
};

/// One round of a ring all-reduce of a stage's gradients.
struct ring_chunk {
  int64_t step = 0;
  int round = 0;
  std::vector<float> values;
  int64_t deliver_at_ns = 0; ///< as tensor_header's
  friend bool operator==(const ring_chunk&, const ring_chunk&) = default;
};

/// Gradients to set on a device (from `offset` on: a large stage's come in pieces), or a
/// device's answer to a reduce.
struct gradient_values {
  int64_t step = 0;
  std::vector<float> values;
  int64_t offset = 0;
  friend bool operator==(const gradient_values&, const gradient_values&) = default;
};

/// A running job's fluctuation and fault script, as the coordinator sends it to every stage
/// and pipe at a step boundary once events were injected (`deepcee inject`): the whole
/// script from then on (scripted and injected events), which replaces the receiver's copy
/// before step `step` (from 0) starts. Device, node and region indices are the cluster's
/// (the decoder checks only that they are not negative; the receiver checks them against
/// its cluster).
struct script_update {
  int64_t step = 0;
  runtime::link_timeline script;
  friend bool operator==(const script_update&, const script_update&) = default;
};

} // namespace deepcee::messages
