#include "runtime/schedule/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace deepcee::runtime {

std::string to_string(schedule_kind kind) {
  switch (kind) {
  case schedule_kind::gpipe:
    return "gpipe";
  case schedule_kind::one_f_one_b:
    return "1f1b";
  case schedule_kind::zb_h1:
    return "zb-h1";
  case schedule_kind::zb_h2:
    return "zb-h2";
  case schedule_kind::greedy:
    return "greedy";
  }
  throw std::invalid_argument("unknown schedule_kind value");
}

schedule_kind parse_schedule_kind(std::string_view text) {
  for (auto kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::zb_h1,
                    schedule_kind::zb_h2, schedule_kind::greedy})
    if (text == to_string(kind))
      return kind;
  throw std::invalid_argument("unknown schedule '" + std::string(text) +
                              "' (expected gpipe, 1f1b, zb-h1, zb-h2 or greedy)");
}

char op_letter(op_kind kind) {
  switch (kind) {
  case op_kind::forward:
    return 'F';
  case op_kind::backward_input:
    return 'B';
  case op_kind::backward_weight:
    return 'W';
  }
  return '?';
}

std::string to_string(const schedule_op& op) {
  return std::string(1, op_letter(op.kind)) + std::to_string(op.micro);
}

std::vector<stage_cost> uniform_costs(int stages, double f, double b, double w) {
  stage_cost cost;
  cost.f = f;
  cost.b = b;
  cost.w = w;
  return std::vector<stage_cost>(static_cast<size_t>(std::max(stages, 0)), cost);
}

namespace {

constexpr schedule_op fwd(int i) {
  return {op_kind::forward, i};
}
constexpr schedule_op bwd(int i) {
  return {op_kind::backward_input, i};
}
constexpr schedule_op wgt(int i) {
  return {op_kind::backward_weight, i};
}

std::vector<schedule_op> gpipe_stage(int m) {
  std::vector<schedule_op> ops;
  for (int i = 0; i < m; ++i)
    ops.push_back(fwd(i));
  for (int i = 0; i < m; ++i) {
    ops.push_back(bwd(i));
    ops.push_back(wgt(i));
  }
  return ops;
}

std::vector<schedule_op> one_f_one_b_stage(int p, int s, int m) {
  std::vector<schedule_op> ops;
  const int warmup = std::min(p - s - 1, m);
  for (int i = 0; i < warmup; ++i)
    ops.push_back(fwd(i));
  for (int j = 0; j < m; ++j) {
    if (warmup + j < m)
      ops.push_back(fwd(warmup + j));
    ops.push_back(bwd(j));
    ops.push_back(wgt(j));
  }
  return ops;
}

/// The zero-bubble family: `warmup` F first, then cycles of B(j), W(j - lag), F(warmup + j),
/// then the W still deferred. The W of a cycle comes before its F so that the count of
/// micro-batches between F and W never exceeds warmup + lag; deferring W by `lag` lets the
/// B of later micro-batches travel upstream without waiting behind W, and the deferred W
/// fill the tail where the stage would otherwise wait.
std::vector<schedule_op> zero_bubble_stage(int warmup, int lag, int m) {
  std::vector<schedule_op> ops;
  warmup = std::min(warmup, m);
  for (int i = 0; i < warmup; ++i)
    ops.push_back(fwd(i));
  for (int j = 0; j < m; ++j) {
    ops.push_back(bwd(j));
    if (j - lag >= 0)
      ops.push_back(wgt(j - lag));
    if (warmup + j < m)
      ops.push_back(fwd(warmup + j));
  }
  for (int j = std::max(m - lag, 0); j < m; ++j)
    ops.push_back(wgt(j));
  return ops;
}

} // namespace

pipeline_schedule make_schedule(schedule_kind kind, int stages, int micro_batches) {
  if (stages < 1 || micro_batches < 1)
    throw std::invalid_argument("make_schedule: need stages >= 1 and micro_batches >= 1, got " +
                                std::to_string(stages) + " and " + std::to_string(micro_batches));
  const int p = stages;
  const int m = micro_batches;
  pipeline_schedule result;
  result.stages.reserve(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    switch (kind) {
    case schedule_kind::gpipe:
      result.stages.push_back(gpipe_stage(m));
      break;
    case schedule_kind::one_f_one_b:
      result.stages.push_back(one_f_one_b_stage(p, s, m));
      break;
    case schedule_kind::zb_h1:
      // p - s warm-up F as in 1F1B (which counts its first steady F as warm-up here), and
      // W lagging by s: at most p in flight on every stage.
      result.stages.push_back(zero_bubble_stage(p - s, s, m));
      break;
    case schedule_kind::zb_h2:
      // Enough warm-up F to cover the wait for the first B (2(p-1-s) + 1), and W lagging
      // by 2s so B reach stage 0 early enough to close the tail: at most 2p-1 in flight.
      result.stages.push_back(zero_bubble_stage(2 * (p - s) - 1, 2 * s, m));
      break;
    case schedule_kind::greedy:
      throw std::invalid_argument(
          "make_schedule: the greedy schedule needs stage costs; use make_greedy_schedule");
    }
  }
  result.fused_backward = kind == schedule_kind::gpipe || kind == schedule_kind::one_f_one_b;
  if (kind == schedule_kind::zb_h2 && m < 2 * p - 1) {
    // Too few micro-batches to fill ZB-H2's warm-up: its deferred W then only lengthen the
    // tail. ZB-H1 keeps fewer in flight, so it is a valid ZB-H2 too; take whichever is faster
    // with equal stage times (judged once, on unit costs, so the result stays cost-free).
    auto h1 = make_schedule(schedule_kind::zb_h1, p, m);
    const auto unit = uniform_costs(p);
    const auto t2 = time_schedule(result, unit);
    const auto t1 = time_schedule(h1, unit);
    if (t1.makespan < t2.makespan ||
        (t1.makespan == t2.makespan && t1.steady_period < t2.steady_period))
      return h1;
  }
  return result;
}

} // namespace deepcee::runtime
