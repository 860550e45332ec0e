#include "runtime/schedule/schedule.hpp"

#include "runtime/schedule/op_readiness.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

/// The greedy zero-bubble list scheduler.
///
/// It simulates time. At each step the stage that can act earliest acts (ties: the lower
/// stage) and picks, among the ops ready at that moment:
/// 1. F or B. When only one is ready, that one. When both are, the one it did not run last
///    (after the warm-up, one F and one B alternately, as in the paper's steady phase), or,
///    in the B-first variant, the B: it is on the critical path back to stage 0 and frees
///    memory. F run in micro-batch order; the oldest ready B runs first. An F runs only if
///    memory admits it (below).
/// 2. Otherwise the oldest pending W: nothing else is ready (a bubble), or memory is full
///    and only a W frees it. In the waiting variant, a stage that knows a B arrives before
///    the W would end, and is not short of memory, waits for that B instead, so the B
///    chain stays tight (the paper inserts W only into gaps of at least T_W).
/// 3. Otherwise it waits for the next arrival.
/// W still pending at the end run in the tail, so every W is done by the end.
///
/// Memory: an F is admitted only if, counting every micro-batch between F and B at
/// max(activation_bytes, weight_grad_bytes), the stage stays within memory_limit. Counting
/// the larger of the two means a later B can never push the stage over its limit, so no B
/// ever waits for memory. The tapered variant also caps stage s at p - s micro-batches
/// between F and B (1F1B's warm-up), which helps when later stages are slow.
///
/// All eight variants (alternate or B-first, waiting or not, tapered or not) run, and with
/// `compare_with_fixed` the fixed schedules that fit the limits are timed too; the schedule
/// with the smallest makespan wins (ties keep the earlier candidate). So the result is never
/// worse than 1F1B, ZB-H1 or ZB-H2 under the same costs and limits. On equal stages with a
/// limit of p micro-batches the list scheduler alone already matches ZB-H1 (3m + p - 1).
namespace deepcee::runtime {

namespace {

void check_costs(const std::vector<stage_cost>& costs, int m) {
  if (costs.empty())
    throw std::invalid_argument("greedy schedule: no stage costs");
  if (m < 1)
    throw std::invalid_argument("greedy schedule: need micro_batches >= 1, got " +
                                std::to_string(m));
  for (size_t s = 0; s < costs.size(); ++s) {
    const auto& c = costs[s];
    const auto name = "greedy schedule: stage " + std::to_string(s) + ": ";
    if (!(c.f > 0.0) || !(c.b > 0.0) || !(c.w >= 0.0) || !std::isfinite(c.f) ||
        !std::isfinite(c.b) || !std::isfinite(c.w))
      throw std::invalid_argument(name + "times must be finite, f and b > 0, w >= 0");
    if (!(c.comm_to_next >= 0.0) || !std::isfinite(c.comm_to_next))
      throw std::invalid_argument(name + "comm_to_next must be finite and >= 0");
    if (!(c.activation_bytes >= 0.0) || !(c.weight_grad_bytes >= 0.0))
      throw std::invalid_argument(name + "activation and weight-gradient bytes must be >= 0");
    const double one = std::max(c.activation_bytes, c.weight_grad_bytes);
    if (!(c.memory_limit >= one))
      throw std::invalid_argument(name + "memory_limit " + std::to_string(c.memory_limit) +
                                  " cannot hold one micro-batch (" + std::to_string(one) +
                                  " bytes)");
  }
}

/// One of the eight variants of the list scheduler (see the top of this file).
struct list_variant {
  int max_in_flight = 0;
  bool wait_for_b = false;
  bool alternate = false;
  bool tapered = false;
};

/// The list scheduler's run: each stage's readiness (op_readiness.hpp says when an op may
/// run) and the choices it has left.
class list_scheduler {
public:
  list_scheduler(const std::vector<stage_cost>& costs, int m, list_variant variant);
  pipeline_schedule run();

private:
  struct stage_state {
    stage_readiness readiness;
    double free_at = 0.0;
    int next_f = 0;              ///< F run in micro-batch order
    std::vector<int> awaiting_b; ///< F done, B not yet run; kept sorted
    std::deque<int> pending_w;   ///< B done, W not yet run; oldest first
    std::vector<schedule_op> ops;
    bool last_was_b = false; ///< the last F or B run was a B
  };

  double f_ready(int s) const;
  double b_ready(int s, int micro) const;
  bool f_admitted(int s) const;
  double earliest_b(int s) const;
  double action_time(int s) const;
  void refresh_around(int s);
  int first_to_act() const;
  bool act(int s, double t);
  void record(int s, schedule_op op, double t);

  const std::vector<stage_cost>& costs_;
  int m_;
  int p_;
  list_variant variant_;
  std::vector<stage_state> st_;
  std::vector<double> action_; ///< when each stage can next act, or not_yet
};

constexpr double not_yet = stage_readiness::not_yet;

list_scheduler::list_scheduler(const std::vector<stage_cost>& costs, int m, list_variant variant)
    : costs_(costs), m_(m), p_(static_cast<int>(costs.size())), variant_(variant) {
  for (int s = 0; s < p_; ++s)
    st_.push_back({stage_readiness({s == 0, s == p_ - 1, false}, m, 0.0)});
  for (int s = 0; s < p_; ++s)
    action_.push_back(action_time(s));
}

double list_scheduler::f_ready(int s) const {
  const auto& x = st_[static_cast<size_t>(s)];
  return x.readiness.ready_at({op_kind::forward, x.next_f});
}

double list_scheduler::b_ready(int s, int micro) const {
  return st_[static_cast<size_t>(s)].readiness.ready_at({op_kind::backward_input, micro});
}

bool list_scheduler::f_admitted(int s) const {
  const auto& x = st_[static_cast<size_t>(s)];
  if (x.next_f >= m_)
    return false;
  const auto& held = x.readiness.held();
  if (variant_.max_in_flight > 0 && held.total() + 1 > variant_.max_in_flight)
    return false;
  if (variant_.tapered && held.forward_held + 1 > p_ - s)
    return false;
  return admits_forward(held, costs_[static_cast<size_t>(s)]);
}

/// The earliest known time at which some B of stage s is ready, or not_yet.
double list_scheduler::earliest_b(int s) const {
  double best = not_yet;
  for (int i : st_[static_cast<size_t>(s)].awaiting_b)
    best = std::min(best, b_ready(s, i));
  return best;
}

/// When stage s can next act, given what is known, or not_yet.
double list_scheduler::action_time(int s) const {
  const auto& x = st_[static_cast<size_t>(s)];
  double ready = earliest_b(s);
  if (f_admitted(s))
    ready = std::min(ready, f_ready(s));
  if (!x.pending_w.empty())
    ready = std::min(ready, x.free_at);
  return ready == not_yet ? not_yet : std::max(x.free_at, ready);
}

/// Only the stage that acted and its neighbours (whose inputs it produced) change.
void list_scheduler::refresh_around(int s) {
  for (int k = std::max(s - 1, 0); k <= std::min(s + 1, p_ - 1); ++k)
    action_[static_cast<size_t>(k)] = action_time(k);
}

/// The stage that can act first; ties go to the lower stage.
int list_scheduler::first_to_act() const {
  int chosen = -1;
  for (int s = 0; s < p_; ++s)
    if (action_[static_cast<size_t>(s)] != not_yet &&
        (chosen < 0 || action_[static_cast<size_t>(s)] < action_[static_cast<size_t>(chosen)]))
      chosen = s;
  if (chosen < 0)
    throw std::logic_error("greedy schedule: no stage can act (memory limits too tight?)");
  return chosen;
}

/// Stage s acts at t: runs the op the rule picks, or waits for a B. Returns whether an op
/// ran.
bool list_scheduler::act(int s, double t) {
  auto& x = st_[static_cast<size_t>(s)];
  int ready_b = -1; // among B ready now, the oldest micro-batch
  for (int i : x.awaiting_b)
    if (b_ready(s, i) <= t) {
      ready_b = i;
      break;
    }
  const bool f_now = f_admitted(s) && f_ready(s) <= t;
  if (f_now && (ready_b < 0 || (variant_.alternate && x.last_was_b))) {
    record(s, {op_kind::forward, x.next_f}, t);
  } else if (ready_b >= 0) {
    record(s, {op_kind::backward_input, ready_b}, t);
  } else if (!x.pending_w.empty()) {
    const double b_at = earliest_b(s);
    if (variant_.wait_for_b && b_at != not_yet && b_at < t + costs_[static_cast<size_t>(s)].w &&
        f_admitted(s)) {
      // A B arrives before this W would end and memory is not what forces the W: wait.
      x.free_at = b_at;
      refresh_around(s);
      return false;
    }
    record(s, {op_kind::backward_weight, x.pending_w.front()}, t);
  } else {
    throw std::logic_error("greedy schedule: stage chosen with nothing to do");
  }
  return true;
}

/// Puts op on stage s's list at t; its end readies what waits for it, here and at the
/// neighbour its tensor goes to (after the boundary's transfer).
void list_scheduler::record(int s, schedule_op op, double t) {
  auto& x = st_[static_cast<size_t>(s)];
  const auto& c = costs_[static_cast<size_t>(s)];
  switch (op.kind) {
  case op_kind::forward:
    x.free_at = t + c.f;
    x.awaiting_b.insert(std::lower_bound(x.awaiting_b.begin(), x.awaiting_b.end(), op.micro),
                        op.micro);
    ++x.next_f;
    break;
  case op_kind::backward_input:
    x.free_at = t + c.b;
    x.awaiting_b.erase(std::find(x.awaiting_b.begin(), x.awaiting_b.end(), op.micro));
    x.pending_w.push_back(op.micro);
    break;
  case op_kind::backward_weight:
    x.free_at = t + c.w;
    x.pending_w.pop_front();
    break;
  }
  const auto flow = x.readiness.op_ended(op, x.free_at);
  if (flow == tensor_flow::activation_to_next)
    st_[static_cast<size_t>(s + 1)].readiness.input_arrived(op_input::activation, op.micro,
                                                            x.free_at + c.comm_to_next);
  else if (flow == tensor_flow::gradient_to_previous)
    st_[static_cast<size_t>(s - 1)].readiness.input_arrived(
        op_input::gradient, op.micro, x.free_at + costs_[static_cast<size_t>(s - 1)].comm_to_next);
  if (op.kind != op_kind::backward_weight)
    x.last_was_b = op.kind == op_kind::backward_input;
  x.ops.push_back(op);
  refresh_around(s);
}

pipeline_schedule list_scheduler::run() {
  for (size_t remaining = 3 * static_cast<size_t>(m_) * static_cast<size_t>(p_); remaining > 0;) {
    const int s = first_to_act();
    if (act(s, action_[static_cast<size_t>(s)]))
      --remaining;
  }
  pipeline_schedule result;
  for (auto& x : st_)
    result.stages.push_back(std::move(x.ops));
  return result;
}

bool fits(const schedule_timing& t, const std::vector<stage_cost>& costs, int max_in_flight) {
  for (size_t s = 0; s < costs.size(); ++s) {
    if (!within_memory(t.peak_bytes[s], costs[s].memory_limit))
      return false;
    if (max_in_flight > 0 && t.peak_in_flight_fw[s] > max_in_flight)
      return false;
  }
  return true;
}

} // namespace

timed_schedule make_timed_greedy_schedule(const std::vector<stage_cost>& costs, int micro_batches,
                                          const greedy_options& options) {
  check_costs(costs, micro_batches);
  const int p = static_cast<int>(costs.size());

  std::vector<pipeline_schedule> tried;
  timed_schedule best;
  size_t best_index = 0;
  best.timing.makespan = std::numeric_limits<double>::infinity();
  auto offer = [&](pipeline_schedule candidate) {
    // Variants often agree: the same op lists time the same, and a tie keeps the earlier.
    for (const auto& t : tried)
      if (t.fused_backward == candidate.fused_backward && t.stages == candidate.stages)
        return;
    auto t = time_schedule(candidate, costs);
    tried.push_back(std::move(candidate));
    if (t.makespan < best.timing.makespan && fits(t, costs, options.max_in_flight)) {
      best.timing = std::move(t);
      best_index = tried.size();
    }
  };
  for (int variant = 0; variant < 8; ++variant)
    offer(list_scheduler(
              costs, micro_batches,
              {options.max_in_flight, (variant & 1) != 0, (variant & 2) == 0, (variant & 4) != 0})
              .run());
  if (options.compare_with_fixed)
    for (auto kind : {schedule_kind::zb_h2, schedule_kind::zb_h1, schedule_kind::one_f_one_b})
      offer(make_schedule(kind, p, micro_batches));
  if (best_index == 0)
    throw std::logic_error("greedy schedule: no candidate fits the memory limits");
  best.schedule = std::move(tried[best_index - 1]);
  return best;
}

pipeline_schedule make_greedy_schedule(const std::vector<stage_cost>& costs, int micro_batches,
                                       const greedy_options& options) {
  return make_timed_greedy_schedule(costs, micro_batches, options).schedule;
}

} // namespace deepcee::runtime
