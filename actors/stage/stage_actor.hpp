#pragma once

#include "actors/net/link_layer.hpp"
#include "actors/net/pipe_sync.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "messages/codec.hpp"
#include "messages/types.hpp"
#include "runtime/base/step_ordered.hpp"
#include "runtime/schedule/op_readiness.hpp"
#include "runtime/step/shaped_delivery.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

/// A tensor to a neighbour while its op runs: its header, and the message whose payload
/// the devices write in place (none in dry mode, which sends the header alone).
struct outgoing_tensor {
  tensor_role role = tensor_role::activation;
  messages::tensor_header header;
  std::shared_ptr<messages::tensor_draft> draft;
};

/// A validated activation or gradient waiting for its op (stage_tensors.hpp reads it).
struct received_tensor {
  /// When its last part arrived: the sender's link model (virtual, dry, shaped wall), or
  /// the receiver's clock (wall without shaping).
  double arrival_s = 0;
  /// The decoded message, whose f32 payload is read in place (header only in dry mode),
  /// and the payload widened to fp32 when it travelled compressed.
  messages::tensor_message decoded;
  std::vector<float> values;
};

/// A received tensor after validation, routed by its header.
struct accepted_tensor {
  tensor_role role = tensor_role::activation;
  int64_t step = 0;
  int micro = 0;
  received_tensor tensor;
};

/// What a stage runs in a step: the plan with the adapter's allocation in force (its
/// micro-batch counts, device splits and compressions; runtime::plan_allocation), and the
/// emulated cluster's op lists and costs for it.
struct stage_allocation {
  runtime::plan plan;
  std::shared_ptr<const runtime::virtual_cluster> cluster;
  std::optional<messages::rebalance> order; ///< what set it; none: the job's plan
  /// The script in force from its step on, when injected events set it (with `order` or not).
  std::optional<messages::script_update> script;
};

/// Where a stage is in its life. The messages each phase takes:
/// - unwired: a step order waits until the wiring comes (they come from different senders,
///   so CAF does not order them);
/// - idle (between steps): step orders, optimize orders (answered by nothing: the group
///   steps the devices, and the next step's ops reach them after it; in shaped wall time a
///   step order is held until the optimizer step is done and has taken, from the order's
///   arrival, what it really took), snapshots and restores; inputs and gradient shares of
///   the next step are kept for it;
/// - computing: the op list runs; inputs, pipe messages and the group's op answers;
/// - reducing: the op list is done; the group's reduce, gradient shares of other pipelines.
/// A failure in any phase reports the error and returns the stage to idle.
enum class stage_phase { unwired, idle, computing, reducing };

/// A stage's state during a job. Inputs that arrive before their step starts (a neighbour
/// may start earlier) wait in the per-step maps.
struct stage_state {
  static inline const char* name = "stage";

  std::shared_ptr<job_context> job;
  int pipeline = 0;
  int stage = 0;
  group_actor group; ///< its devices; none in dry mode: no weights, no kernels
  int first_layer = 0, last_layer = 0;
  runtime::stage_place place; ///< first (embedding), last (head), fused backward
  std::shared_ptr<const stage_allocation> allocation; ///< the current step's
  /// Allocations the coordinator ordered for later steps, by the step they start at.
  runtime::step_ordered<std::shared_ptr<const stage_allocation>> ordered;
  std::vector<runtime::schedule_op> ops; ///< the allocation's op list for this stage
  runtime::virtual_stage costs;
  link_layer links;
  pipe_sync sync;                 ///< shared links: pipes and promises (virtual, dry)
  std::vector<stage_actor> peers; ///< flat order
  coordinator_actor coordinator;
  std::optional<step_start> unwired_order; ///< a step order that came before the wiring

  stage_phase phase = stage_phase::unwired;
  // The current step.
  int64_t step = 0;
  uint64_t epoch = 0;        ///< counts started steps: an answer of an abandoned one is ignored
  bool op_running = false;   ///< computing: the list's next op is with the group
  runtime::op_list_run list; ///< the op list's progress and the readiness of its ops
  double free_at = 0;
  double loss_sum = 0;
  std::shared_ptr<const runtime::token_batch> batch; ///< first and last stages
  std::map<int, outgoing_tensor> pending_grad_out;   ///< fused: sent when W ends
  std::vector<op_record> records;
  /// Wall time: the op that the script's slowdown or stop holds back until `slowed` comes.
  struct held_op {
    double start = 0, end = 0, loss = 0;
    std::optional<outgoing_tensor> out;
  };
  std::optional<held_op> held;
  /// Shaped wall time: the optimizer step that the coordinator's order started (it came
  /// at once, where the emulated link would take a latency) and how long it took, and the
  /// next step's start that waits for it (runtime::step_begin_due_s).
  bool optimizing = false;
  double optimizer_started = 0;
  std::optional<double> optimizer_took; ///< none: no optimizer step before the held start
  std::optional<step_start> held_start;
  double held_start_arrival = 0;
  std::vector<float> own_gradients; ///< the group's sum, once reduced
  int64_t dropped = 0;              ///< malformed messages so far

  // Inputs by step, then micro-batch (an input stays until its op ends: the op reads it
  // in place); gradient shares by step, then sending pipeline.
  std::map<int64_t, std::map<int, std::shared_ptr<received_tensor>>> activations, gradients;
  std::map<int64_t, std::vector<gradient_share>> shares;

  /// Shaped wall time: tensors (by sending stage, flat) and gradient shares (by sending
  /// pipeline and stage) that came before their modelled arrival, held until then; the
  /// nodes' host boots (the wiring's); the longest hold the job's link model allows
  /// (runtime::hold_limit_s, computed at the first hold).
  runtime::hold_lines<accepted_tensor> held_tensors;
  runtime::hold_lines<gradient_share, std::pair<int, int>> held_shares;
  std::vector<std::string> boot_ids;
  double max_hold_s = -1;

  /// Peer snapshots (stage_snapshots.hpp): the copies this stage keeps, its own and those
  /// of stages on other nodes, by (pipeline, stage), oldest first, two at most.
  std::map<std::pair<int, int>, std::vector<stage_snapshot>> kept;
};

/// The allocation in force at `step` (the current step's or one ordered for a later step).
const stage_allocation& allocation_at(const stage_state& st, int64_t step);
/// The plan in force at `step` (the current step's or one ordered for a later step).
const runtime::plan& plan_at(const stage_state& st, int64_t step);

/// What the stage knows now, for the lower bounds on its next send times (pipe_sync).
runtime::stage_progress progress_of(const stage_state& st);

/// Spawns the actor of stage `stage` of pipeline `pipeline`; it spawns its group actor (one
/// device actor per device) at once, so weights exist before the first step (dry mode
/// builds none). The job's time mode decides how op and transfer times come about:
/// virtual and dry carry the emulated cluster's times on the messages, wall measures them.
stage_actor spawn_stage(caf::actor_system& sys, std::shared_ptr<job_context> job, int pipeline,
                        int stage);

} // namespace deepcee::actors
