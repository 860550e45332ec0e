#include "runtime/schedule.hpp"

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

struct stage_state {
  double free_at = 0.0;
  int next_f = 0;              // F run in micro-batch order
  std::vector<int> awaiting_b; // F done, B not yet run; kept sorted
  std::deque<int> pending_w;   // B done, W not yet run; oldest first
  std::vector<schedule_op> ops;
  bool last_was_b = false; // the last F or B run was a B
};

constexpr double unknown = -1.0;

pipeline_schedule list_schedule(const std::vector<stage_cost>& costs, int m, int max_in_flight,
                                bool wait_for_b, bool alternate, bool tapered) {
  const int p = static_cast<int>(costs.size());
  const auto M = static_cast<size_t>(m);
  std::vector<stage_state> st(static_cast<size_t>(p));
  std::vector<std::vector<double>> f_end(static_cast<size_t>(p), std::vector<double>(M, unknown));
  std::vector<std::vector<double>> b_end(static_cast<size_t>(p), std::vector<double>(M, unknown));

  auto f_ready = [&](int s) -> double {
    const int i = st[static_cast<size_t>(s)].next_f;
    if (s == 0)
      return 0.0;
    const double e = f_end[static_cast<size_t>(s - 1)][static_cast<size_t>(i)];
    return e == unknown ? unknown : e + costs[static_cast<size_t>(s - 1)].comm_to_next;
  };
  auto b_ready = [&](int s, int i) -> double {
    if (s == p - 1)
      return f_end[static_cast<size_t>(s)][static_cast<size_t>(i)];
    const double e = b_end[static_cast<size_t>(s + 1)][static_cast<size_t>(i)];
    return e == unknown ? unknown : e + costs[static_cast<size_t>(s)].comm_to_next;
  };
  auto f_admitted = [&](int s) {
    const auto& x = st[static_cast<size_t>(s)];
    const auto& c = costs[static_cast<size_t>(s)];
    if (x.next_f >= m)
      return false;
    const auto fb = static_cast<double>(x.awaiting_b.size());
    const auto bw = static_cast<double>(x.pending_w.size());
    if (max_in_flight > 0 && fb + bw + 1 > max_in_flight)
      return false;
    if (tapered && fb + 1 > p - s)
      return false;
    return (fb + 1) * std::max(c.activation_bytes, c.weight_grad_bytes) +
               bw * c.weight_grad_bytes <=
           c.memory_limit;
  };
  // Earliest known time at which some B of stage s is ready, or unknown.
  auto earliest_b = [&](int s, int& micro) {
    double best = unknown;
    micro = -1;
    for (int i : st[static_cast<size_t>(s)].awaiting_b) {
      const double r = b_ready(s, i);
      if (r != unknown && (best == unknown || r < best)) {
        best = r;
        micro = i;
      }
    }
    return best;
  };

  // When each stage can next act, given what is known; only the stage that acted and its
  // neighbours (whose inputs it produced) change, so only they are recomputed.
  auto action_time = [&](int s) {
    const auto& x = st[static_cast<size_t>(s)];
    double t = unknown;
    auto consider = [&](double r) {
      if (r != unknown)
        t = t == unknown ? std::max(x.free_at, r) : std::min(t, std::max(x.free_at, r));
    };
    int micro = -1;
    consider(earliest_b(s, micro));
    if (f_admitted(s))
      consider(f_ready(s));
    if (!x.pending_w.empty())
      consider(x.free_at);
    return t;
  };
  std::vector<double> action(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s)
    action[static_cast<size_t>(s)] = action_time(s);
  auto refresh_around = [&](int s) {
    for (int k = std::max(s - 1, 0); k <= std::min(s + 1, p - 1); ++k)
      action[static_cast<size_t>(k)] = action_time(k);
  };

  size_t remaining = 3 * M * static_cast<size_t>(p);
  while (remaining > 0) {
    // The stage that can act first; ties go to the lower stage.
    int chosen = -1;
    double chosen_time = 0.0;
    for (int s = 0; s < p; ++s) {
      const double t = action[static_cast<size_t>(s)];
      if (t != unknown && (chosen < 0 || t < chosen_time)) {
        chosen = s;
        chosen_time = t;
      }
    }
    if (chosen < 0)
      throw std::logic_error("greedy schedule: no stage can act (memory limits too tight?)");

    const int s = chosen;
    auto& x = st[static_cast<size_t>(s)];
    const auto& c = costs[static_cast<size_t>(s)];
    const double t = chosen_time;

    int b_micro = -1;
    const double b_at = earliest_b(s, b_micro);
    // Among B ready now, the oldest micro-batch.
    int ready_b = -1;
    for (int i : x.awaiting_b)
      if (const double r = b_ready(s, i); r != unknown && r <= t) {
        ready_b = i;
        break;
      }
    const double fr = f_admitted(s) ? f_ready(s) : unknown;

    schedule_op op{};
    const bool f_now = fr != unknown && fr <= t;
    if (f_now && (ready_b < 0 || (alternate && x.last_was_b))) {
      op = {op_kind::forward, x.next_f};
    } else if (ready_b >= 0) {
      op = {op_kind::backward_input, ready_b};
    } else if (!x.pending_w.empty()) {
      if (wait_for_b && b_at != unknown && b_at < t + c.w && f_admitted(s)) {
        // A B arrives before this W would end and memory is not what forces the W: wait.
        x.free_at = b_at;
        refresh_around(s);
        continue;
      }
      op = {op_kind::backward_weight, x.pending_w.front()};
    } else {
      throw std::logic_error("greedy schedule: stage chosen with nothing to do");
    }

    const auto i = static_cast<size_t>(op.micro);
    switch (op.kind) {
    case op_kind::forward:
      x.free_at = t + c.f;
      f_end[static_cast<size_t>(s)][i] = x.free_at;
      x.awaiting_b.insert(std::lower_bound(x.awaiting_b.begin(), x.awaiting_b.end(), op.micro),
                          op.micro);
      ++x.next_f;
      break;
    case op_kind::backward_input:
      x.free_at = t + c.b;
      b_end[static_cast<size_t>(s)][i] = x.free_at;
      x.awaiting_b.erase(std::find(x.awaiting_b.begin(), x.awaiting_b.end(), op.micro));
      x.pending_w.push_back(op.micro);
      break;
    case op_kind::backward_weight:
      x.free_at = t + c.w;
      x.pending_w.pop_front();
      break;
    }
    if (op.kind != op_kind::backward_weight)
      x.last_was_b = op.kind == op_kind::backward_input;
    x.ops.push_back(op);
    --remaining;
    refresh_around(s);
  }

  pipeline_schedule result;
  for (auto& x : st)
    result.stages.push_back(std::move(x.ops));
  return result;
}

bool fits(const schedule_timing& t, const std::vector<stage_cost>& costs, int max_in_flight) {
  for (size_t s = 0; s < costs.size(); ++s) {
    // A relative slack absorbs rounding in the byte sums.
    if (t.peak_bytes[s] > costs[s].memory_limit * (1.0 + 1e-12))
      return false;
    if (max_in_flight > 0 && t.peak_in_flight_fw[s] > max_in_flight)
      return false;
  }
  return true;
}

} // namespace

pipeline_schedule make_greedy_schedule(const std::vector<stage_cost>& costs, int micro_batches,
                                       const greedy_options& options) {
  check_costs(costs, micro_batches);
  const int p = static_cast<int>(costs.size());

  pipeline_schedule best;
  double best_makespan = std::numeric_limits<double>::infinity();
  auto offer = [&](pipeline_schedule candidate) {
    const auto t = time_schedule(candidate, costs);
    if (t.makespan < best_makespan && fits(t, costs, options.max_in_flight)) {
      best = std::move(candidate);
      best_makespan = t.makespan;
    }
  };
  for (int variant = 0; variant < 8; ++variant)
    offer(list_schedule(costs, micro_batches, options.max_in_flight, (variant & 1) != 0,
                        (variant & 2) == 0, (variant & 4) != 0));
  if (options.compare_with_fixed)
    for (auto kind : {schedule_kind::zb_h2, schedule_kind::zb_h1, schedule_kind::one_f_one_b})
      offer(make_schedule(kind, p, micro_batches));
  if (best.stages.empty())
    throw std::logic_error("greedy schedule: no candidate fits the memory limits");
  return best;
}

} // namespace deepcee::runtime
