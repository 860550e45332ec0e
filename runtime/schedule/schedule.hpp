#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

/// Pipeline schedules: per stage, the ordered list of F, B and W ops that a stage executes
/// exactly as given. Pure values and functions, so the planner, the runtime and the
/// discrete-event simulator share them.
///
/// Stages are numbered 0 (first, reads the data) to p-1 (last, computes the loss); micro-batches
/// 0 to m-1. The dependencies every schedule must respect:
/// - F(i, s) needs F(i, s-1) (plus the transfer from s-1 to s);
/// - B(i, s) needs B(i, s+1) (plus the transfer back), or F(i, p-1) on the last stage;
/// - W(i, s) needs B(i, s) on the same stage.
namespace deepcee::runtime {

/// F: forward; B: gradient with respect to the stage's input (on the critical path back to
/// stage 0); W: gradient with respect to the stage's weights (only needed before the
/// optimizer step, so it can fill bubbles).
enum class op_kind { forward, backward_input, backward_weight };

struct schedule_op {
  op_kind kind;
  int micro;

  friend bool operator==(const schedule_op&, const schedule_op&) = default;
};

struct pipeline_schedule {
  /// stages[s] is stage s's op list, in execution order.
  std::vector<std::vector<schedule_op>> stages;
  /// True for GPipe and 1F1B: one fused backward kernel computes B and W, so each W
  /// immediately follows its B and the input gradient leaves the stage only when W ends.
  /// Evaluators must honour this, or a fused schedule looks better than it runs.
  bool fused_backward = false;

  int stage_count() const { return static_cast<int>(stages.size()); }
};

enum class schedule_kind { gpipe, one_f_one_b, zb_h1, zb_h2, greedy };

/// "gpipe", "1f1b", "zb-h1", "zb-h2", "greedy".
std::string to_string(schedule_kind kind);
/// Inverse of to_string; throws std::invalid_argument naming the unknown text.
schedule_kind parse_schedule_kind(std::string_view text);
/// "F", "B" or "W".
char op_letter(op_kind kind);
/// "F3" style, for messages and traces.
std::string to_string(const schedule_op& op);

/// Per-stage costs. Times in seconds (any unit works as long as all agree), bytes in bytes.
struct stage_cost {
  double f = 1.0;
  double b = 1.0;
  double w = 1.0;
  /// Time to move one activation (forward) or one gradient (backward) between this stage
  /// and the next; the last stage's value is unused.
  double comm_to_next = 0.0;
  /// Kept from the end of F until the end of B.
  double activation_bytes = 1.0;
  /// Kept from the end of B until the end of W (the layer inputs and output gradients W
  /// needs; usually smaller than activation_bytes).
  double weight_grad_bytes = 1.0;
  /// Bytes this stage may spend on the two kinds above.
  double memory_limit = std::numeric_limits<double>::infinity();
};

/// `stages` equal stages with the given times, no communication, no memory limit.
std::vector<stage_cost> uniform_costs(int stages, double f = 1.0, double b = 1.0, double w = 1.0);

/// The fixed schedules (every kind but greedy, which needs costs). Works for any p >= 1 and
/// m >= 1, m < p included; throws std::invalid_argument otherwise.
/// - gpipe: all F in micro order, then B+W (fused) in micro order. Peak in flight m.
/// - one_f_one_b: p-s-1 warm-up F, then F/B pairs, then the remaining B; fused backward.
/// - zb_h1: 1F1B's order of F and B with p-s warm-up F; stage s defers its W by s
///   micro-batches, so each stage keeps at most p micro-batches between F and W (the same
///   peak as 1F1B's first stage) and the deferred W fill the tail. With T_F=T_B=T_W=T and no
///   communication the step takes (3m + p - 1) T, against 1F1B's 3(m + p - 1) T.
/// - zb_h2: 2p-2s-1 warm-up F and W deferred by 2s, so at most 2p-1 micro-batches are in
///   flight; with equal times each stage runs without a gap from its first op to its last
///   (a parallelogram), which is zero bubble once steps overlap (the paper's optimizer
///   post-validation). With m < 2p-1 its warm-up cannot fill; it then takes whichever of
///   this layout and ZB-H1's is faster on equal unit costs (a cost-free choice).
pipeline_schedule make_schedule(schedule_kind kind, int stages, int micro_batches);

struct greedy_options {
  /// When true, the fixed schedules that fit the memory limits are timed too and the best
  /// (smallest makespan) of all candidates is returned, so the greedy schedule is never
  /// worse than 1F1B, ZB-H1 or ZB-H2 under the given costs.
  bool compare_with_fixed = true;
  /// Extra cap on micro-batches between F and W per stage; 0 means memory alone decides.
  int max_in_flight = 0;
};

/// Greedy zero-bubble list scheduler over heterogeneous per-stage costs (see
/// schedule_greedy.cpp for the rule). Deterministic. Throws std::invalid_argument when the
/// costs are invalid or a stage's memory cannot hold even one micro-batch.
pipeline_schedule make_greedy_schedule(const std::vector<stage_cost>& costs, int micro_batches,
                                       const greedy_options& options = {});

/// make_greedy_schedule with its time_schedule under the same costs, which it computed to
/// choose it.
struct timed_schedule;
timed_schedule make_timed_greedy_schedule(const std::vector<stage_cost>& costs, int micro_batches,
                                          const greedy_options& options = {});

/// Throws std::invalid_argument naming the stage and op when an op is missing, duplicated or
/// out of range, when a fused schedule has a W that does not directly follow its B, or when
/// executing the lists in order deadlocks (some op waits on one that can never run).
void check_schedule(const pipeline_schedule& schedule, int micro_batches);

struct timed_op {
  schedule_op op;
  double start = 0.0;
  double end = 0.0;
};

/// The result of executing a schedule under dependencies, every stage starting at time 0.
///
/// Bubble ratios, two notions:
/// - bubble_ratio (synchronous step, the simulator's notion): (p * makespan - busy) /
///   (p * makespan), where busy sums every op's time. stage_bubble[s] is
///   (makespan - busy_s) / makespan; bubble_ratio is their mean. With equal stages,
///   T_F = T_B = T_W and no communication, 1F1B gives exactly (p-1)/(m+p-1) and ZB-H1
///   (p-1)/(3m+p-1).
/// - steady_bubble_ratio (steps overlapped, the paper's notion for ZB-H2): stage s only
///   occupies [its first start, its last end] (its span); with steps overlapped the step
///   period is the largest span, and steady_bubble_ratio = (p * period - busy) / (p * period).
///   It equals bubble_ratio for GPipe, 1F1B and ZB-H1 with equal stages, and is 0 for ZB-H2.
///
/// In flight, per stage, counted after each op: micro-batches with F done and B not done
/// (peak_in_flight_fb, what holds the full activations) and with F done and W not done
/// (peak_in_flight_fw, the stricter count that the paper's ZB-H1/ZB-H2 bounds p and 2p-1
/// hold for). peak_bytes[s] = max over time of activation_bytes * (F done, B not) +
/// weight_grad_bytes * (B done, W not).
struct schedule_timing {
  std::vector<std::vector<timed_op>> ops; ///< per stage, in list order
  double makespan = 0.0;
  std::vector<double> busy;
  std::vector<double> span_start;
  std::vector<double> span_end;
  std::vector<double> stage_bubble;
  double bubble_ratio = 0.0;
  double steady_period = 0.0;
  double steady_bubble_ratio = 0.0;
  std::vector<int> peak_in_flight_fb;
  std::vector<int> peak_in_flight_fw;
  std::vector<double> peak_bytes;

  int max_peak_in_flight_fb() const;
  int max_peak_in_flight_fw() const;
};

struct timed_schedule {
  pipeline_schedule schedule;
  schedule_timing timing;
};

/// Executes each stage's list in order, each op starting as soon as its stage is free and
/// its dependency is met. Throws std::invalid_argument when costs do not match the stage
/// count or the schedule is invalid (check_schedule's errors).
schedule_timing time_schedule(const pipeline_schedule& schedule,
                              const std::vector<stage_cost>& costs);

/// A lower bound on time_schedule(schedule, costs).makespan for every schedule of
/// `micro_batches` micro-batches over these stages, fixed or greedy, fused or not. On stage
/// s every op waits for an F of stage s, which waits for the F chain before it: nothing runs
/// there before H_s, the sum of f + comm_to_next of the stages before s. From H_s the stage
/// runs its m F, m B and m W one at a time. After its last B ends, that micro-batch's
/// gradient still crosses each earlier stage (comm_to_next + b each, a fused one waiting
/// for its W too) and stage 0 then runs its W. So the step takes at least, for every s,
/// H_s + max(m (f + b + w), m (f + b) + T_s), with T_s = sum over j < s of (comm_j + b_j),
/// plus w_0 (for s = 0: w_0). 0 for no stages.
double makespan_bound(const std::vector<stage_cost>& costs, int micro_batches);

} // namespace deepcee::runtime
