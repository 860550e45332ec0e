#pragma once

#include "runtime/schedule/schedule.hpp"

#include <limits>
#include <vector>

/// When an F, B or W op of a pipeline stage may run: the one statement of these rules.
/// The schedule checker, the greedy scheduler, the send bounds, the simulator, the plan
/// executor and the stage actor all ask this file; each keeps only what is its own (how
/// time passes, which kernels run, which messages travel).
///
/// The rules, for micro-batch i on stage s:
/// - F(i) waits for the activation of F(i) on stage s-1; the first stage's data is there
///   from the step's start.
/// - B(i) waits for the input gradient of stage s+1; the last stage's B waits for its own
///   F(i), which computed the loss.
/// - W(i) waits for its own B(i).
/// - F sends its activation to the next stage when it ends. B computes the input gradient
///   for the previous stage; it leaves when B ends, or, when B and W are one fused kernel
///   (GPipe, 1F1B), when that kernel ends: at the end of W(i), which directly follows B(i).
/// - A stage runs its op list in order, one op at a time.
/// - Memory: a stage holds the activations of micro-batches between F and B and what W
///   needs of micro-batches between B and W.
namespace deepcee::runtime {

/// Where a stage sits in its pipeline and how its backward runs.
struct stage_place {
  bool first = false;          ///< reads the data: its F waits for nothing
  bool last = false;           ///< computes the loss: its B waits for its own F
  bool fused_backward = false; ///< B and W are one kernel: the gradient leaves when W ends
};

/// What an op waits for, besides its turn in the list and a free stage.
enum class op_input {
  none,         ///< the first stage's F
  activation,   ///< F: the previous stage's output
  gradient,     ///< B: the next stage's input gradient
  own_forward,  ///< the last stage's B: its own F
  own_backward, ///< W: its own B
};

/// A tensor between neighbouring stages.
enum class tensor_flow { none, activation_to_next, gradient_to_previous };

op_input input_of(op_kind kind, stage_place place);
/// The tensor an op computes for a neighbour (F: the activation; B: the input gradient).
tensor_flow output_of(op_kind kind, stage_place place);
/// The tensor whose sending an op's end triggers: a fused B's gradient leaves after its W.
tensor_flow released_by(op_kind kind, stage_place place);
/// The op of the neighbour whose end sends `input` (for messages): F for an activation; B,
/// or W when the neighbour's backward is fused, for a gradient.
op_kind sender_of(op_input input, bool fused_backward);

/// Micro-batches a stage holds between its ops.
struct in_flight {
  int forward_held = 0;  ///< F done, B not: the full activations
  int backward_held = 0; ///< B done, W not: the layer inputs and gradients W needs

  /// Counts an op that ended.
  void count(op_kind kind);
  int total() const { return forward_held + backward_held; }
  double bytes(const stage_cost& cost) const {
    return forward_held * cost.activation_bytes + backward_held * cost.weight_grad_bytes;
  }
};

/// Whether one more F fits the stage's memory. Each micro-batch between F and B counts at
/// the larger of its two sizes, so its later B can never push the stage over its limit.
bool admits_forward(const in_flight& held, const stage_cost& cost);
/// Whether a peak is within the limit; a relative slack absorbs rounding in byte sums.
bool within_memory(double peak_bytes, double limit);

/// The readiness of one stage's ops during one step: per op, the time its input is there.
/// A value type, so a caller may copy it to look ahead (send bounds).
class stage_readiness {
public:
  static constexpr double not_yet = std::numeric_limits<double>::infinity();

  stage_readiness() = default;
  stage_readiness(stage_place place, int micro_batches, double step_start);

  /// The neighbour's tensor that `input` names (activation or gradient) is there at `at`.
  void input_arrived(op_input input, int micro, double at);
  /// The stage's own op ended at `at`: readies what waits for it on this stage and counts
  /// it in flight. Returns the tensor this end sends to a neighbour.
  tensor_flow op_ended(schedule_op op, double at);
  /// When the op's input is (or was) there; not_yet until it is known.
  double ready_at(schedule_op op) const;
  bool ready(schedule_op op) const { return ready_at(op) != not_yet; }

  const stage_place& place() const { return place_; }
  const in_flight& held() const { return held_; }
  int micro_batches() const { return static_cast<int>(forward_.size()); }

private:
  std::vector<double>& times(op_kind kind);
  const std::vector<double>& times(op_kind kind) const;

  stage_place place_;
  std::vector<double> forward_, backward_, weight_; ///< per micro-batch: input ready at
  in_flight held_;
};

/// Stage `stage` of a schedule: first, last, fused as the schedule says.
stage_place place_in(const pipeline_schedule& schedule, int stage);

/// A stage's op list executed in order, with its ops' readiness.
class op_list_run {
public:
  op_list_run() = default;
  op_list_run(const std::vector<schedule_op>& ops, stage_place place, int micro_batches,
              double step_start);

  bool done() const { return !ops_ || next_ >= ops_->size(); }
  size_t position() const { return next_; }
  const std::vector<schedule_op>& ops() const { return *ops_; }
  const schedule_op& next() const { return (*ops_)[next_]; }
  /// When the next op's input is there; not_yet while it is not.
  double next_ready_at() const { return readiness_.ready_at(next()); }
  /// The next op ended at `at`; returns the tensor its end sends.
  tensor_flow complete_next(double at);

  stage_readiness& readiness() { return readiness_; }
  const stage_readiness& readiness() const { return readiness_; }

private:
  const std::vector<schedule_op>* ops_ = nullptr;
  size_t next_ = 0;
  stage_readiness readiness_;
};

} // namespace deepcee::runtime
