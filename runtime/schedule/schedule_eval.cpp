#include "runtime/schedule/schedule.hpp"

#include "runtime/schedule/op_readiness.hpp"

#include <algorithm>
#include <stdexcept>

namespace deepcee::runtime {

namespace {

constexpr int kind_index(op_kind kind) {
  return static_cast<int>(kind);
}

std::string where(int stage, const schedule_op& op) {
  return "stage " + std::to_string(stage) + ": " + to_string(op);
}

/// Each stage holds each of F, B and W of every micro-batch exactly once; a fused schedule
/// has each W right after its B.
void check_structure(const pipeline_schedule& schedule, int m) {
  if (schedule.stages.empty())
    throw std::invalid_argument("schedule has no stages");
  if (m < 1)
    throw std::invalid_argument("schedule needs micro_batches >= 1, got " + std::to_string(m));
  for (int s = 0; s < schedule.stage_count(); ++s) {
    const auto& ops = schedule.stages[static_cast<size_t>(s)];
    std::vector<int> seen(3 * static_cast<size_t>(m), 0);
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto& op = ops[k];
      if (op.micro < 0 || op.micro >= m)
        throw std::invalid_argument(where(s, op) + " names a micro-batch outside 0.." +
                                    std::to_string(m - 1));
      if (++seen[static_cast<size_t>(kind_index(op.kind) * m + op.micro)] > 1)
        throw std::invalid_argument(where(s, op) + " appears more than once");
      if (schedule.fused_backward && op.kind == op_kind::backward_weight &&
          (k == 0 || ops[k - 1] != schedule_op{op_kind::backward_input, op.micro}))
        throw std::invalid_argument(where(s, op) +
                                    " does not directly follow its B in a fused schedule");
    }
    for (int kind = 0; kind < 3; ++kind)
      for (int i = 0; i < m; ++i)
        if (seen[static_cast<size_t>(kind * m + i)] == 0)
          throw std::invalid_argument(where(s, {static_cast<op_kind>(kind), i}) + " is missing");
  }
}

double op_cost(const stage_cost& cost, op_kind kind) {
  switch (kind) {
  case op_kind::forward:
    return cost.f;
  case op_kind::backward_input:
    return cost.b;
  case op_kind::backward_weight:
    return cost.w;
  }
  return 0.0;
}

/// Where the tensor that `flow` names goes and when it arrives there: the transfer after a
/// stage s's op takes the comm time of the boundary it crosses (s to s+1 or s-1 to s).
void deliver(std::vector<op_list_run>& runs, const std::vector<stage_cost>& costs, int s, int micro,
             double end, tensor_flow flow) {
  const auto S = static_cast<size_t>(s);
  if (flow == tensor_flow::activation_to_next)
    runs[S + 1].readiness().input_arrived(op_input::activation, micro, end + costs[S].comm_to_next);
  else if (flow == tensor_flow::gradient_to_previous)
    runs[S - 1].readiness().input_arrived(op_input::gradient, micro,
                                          end + costs[S - 1].comm_to_next);
}

/// The stage to blame for a deadlock: one blocked on its own later op (B before its F, W
/// before its B) is the root cause; otherwise the first blocked stage.
int deadlock_culprit(const std::vector<op_list_run>& runs) {
  for (size_t s = 0; s < runs.size(); ++s)
    if (!runs[s].done()) {
      const auto input = input_of(runs[s].next().kind, runs[s].readiness().place());
      if (input == op_input::own_forward || input == op_input::own_backward)
        return static_cast<int>(s);
    }
  for (size_t s = 0; s < runs.size(); ++s)
    if (!runs[s].done())
      return static_cast<int>(s);
  return -1;
}

[[noreturn]] void throw_deadlock(const std::vector<op_list_run>& runs) {
  const int s = deadlock_culprit(runs);
  const auto& run = runs[static_cast<size_t>(s)];
  const auto& op = run.next();
  const auto place = run.readiness().place();
  const auto input = input_of(op.kind, place);
  const int from = input == op_input::activation ? s - 1 : input == op_input::gradient ? s + 1 : s;
  throw std::invalid_argument(
      where(s, op) + " (position " + std::to_string(run.position()) + ") deadlocks: it waits for " +
      op_letter(sender_of(input, place.fused_backward)) + std::to_string(op.micro) + " on stage " +
      std::to_string(from) + ", which can never run first");
}

/// Runs the lists in order. Start times do not depend on the order in which stages are
/// visited (each op starts at max(stage free, input ready)), so a plain sweep until no
/// stage can move is exact.
schedule_timing execute(const pipeline_schedule& schedule, const std::vector<stage_cost>& costs,
                        int m) {
  const auto P = schedule.stages.size();
  std::vector<op_list_run> runs;
  for (size_t s = 0; s < P; ++s)
    runs.emplace_back(schedule.stages[s], place_in(schedule, static_cast<int>(s)), m, 0.0);
  schedule_timing t;
  t.ops.resize(P);
  std::vector<double> free_at(P, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < P; ++s) {
      auto& run = runs[s];
      while (!run.done() && run.readiness().ready(run.next())) {
        const auto op = run.next();
        const double start = std::max(free_at[s], run.next_ready_at());
        const double end = start + op_cost(costs[s], op.kind);
        free_at[s] = end;
        t.ops[s].push_back({op, start, end});
        deliver(runs, costs, static_cast<int>(s), op.micro, end, run.complete_next(end));
        progress = true;
      }
    }
  }
  if (std::any_of(runs.begin(), runs.end(), [](const op_list_run& r) { return !r.done(); }))
    throw_deadlock(runs);
  return t;
}

void fill_statistics(schedule_timing& t, const pipeline_schedule& schedule,
                     const std::vector<stage_cost>& costs) {
  const auto P = schedule.stages.size();
  const double p = static_cast<double>(P);
  t.busy.assign(P, 0.0);
  t.span_start.assign(P, 0.0);
  t.span_end.assign(P, 0.0);
  t.stage_bubble.assign(P, 0.0);
  t.peak_in_flight_fb.assign(P, 0);
  t.peak_in_flight_fw.assign(P, 0);
  t.peak_bytes.assign(P, 0.0);
  t.makespan = 0.0;
  double busy_total = 0.0;
  for (size_t s = 0; s < P; ++s) {
    const auto& ops = t.ops[s];
    t.span_start[s] = ops.front().start;
    t.span_end[s] = ops.back().end;
    in_flight held;
    for (const auto& o : ops) {
      t.busy[s] += o.end - o.start;
      held.count(o.op.kind);
      t.peak_in_flight_fb[s] = std::max(t.peak_in_flight_fb[s], held.forward_held);
      t.peak_in_flight_fw[s] = std::max(t.peak_in_flight_fw[s], held.total());
      t.peak_bytes[s] = std::max(t.peak_bytes[s], held.bytes(costs[s]));
    }
    busy_total += t.busy[s];
    t.makespan = std::max(t.makespan, t.span_end[s]);
    t.steady_period = std::max(t.steady_period, t.span_end[s] - t.span_start[s]);
  }
  for (size_t s = 0; s < P; ++s)
    t.stage_bubble[s] = t.makespan > 0.0 ? (t.makespan - t.busy[s]) / t.makespan : 0.0;
  t.bubble_ratio = t.makespan > 0.0 ? (p * t.makespan - busy_total) / (p * t.makespan) : 0.0;
  t.steady_bubble_ratio =
      t.steady_period > 0.0 ? (p * t.steady_period - busy_total) / (p * t.steady_period) : 0.0;
}

int micro_batches_of(const pipeline_schedule& schedule) {
  if (schedule.stages.empty())
    throw std::invalid_argument("schedule has no stages");
  const auto& ops = schedule.stages.front();
  return static_cast<int>(std::count_if(
      ops.begin(), ops.end(), [](const schedule_op& op) { return op.kind == op_kind::forward; }));
}

} // namespace

int schedule_timing::max_peak_in_flight_fb() const {
  return peak_in_flight_fb.empty()
             ? 0
             : *std::max_element(peak_in_flight_fb.begin(), peak_in_flight_fb.end());
}

int schedule_timing::max_peak_in_flight_fw() const {
  return peak_in_flight_fw.empty()
             ? 0
             : *std::max_element(peak_in_flight_fw.begin(), peak_in_flight_fw.end());
}

void check_schedule(const pipeline_schedule& schedule, int micro_batches) {
  check_structure(schedule, micro_batches);
  execute(schedule, uniform_costs(schedule.stage_count()), micro_batches);
}

schedule_timing time_schedule(const pipeline_schedule& schedule,
                              const std::vector<stage_cost>& costs) {
  const int m = micro_batches_of(schedule);
  if (costs.size() != schedule.stages.size())
    throw std::invalid_argument("schedule has " + std::to_string(schedule.stages.size()) +
                                " stages but " + std::to_string(costs.size()) + " costs");
  check_structure(schedule, m);
  auto timing = execute(schedule, costs, m);
  fill_statistics(timing, schedule, costs);
  return timing;
}

double makespan_bound(const std::vector<stage_cost>& costs, int micro_batches) {
  const double m = micro_batches;
  double bound = 0;
  double head = 0; // H_s
  double back = 0; // sum over j < s of comm_j + b_j
  for (size_t s = 0; s < costs.size(); ++s) {
    const stage_cost& c = costs[s];
    const double tail = back + costs.front().w; // T_s
    bound = std::max(bound, head + std::max(m * (c.f + c.b + c.w), m * (c.f + c.b) + tail));
    head += c.f + c.comm_to_next;
    back += c.comm_to_next + c.b;
  }
  return bound;
}

} // namespace deepcee::runtime
