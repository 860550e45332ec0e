#include "runtime/schedule.hpp"

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

/// Runs the lists in order. Start times do not depend on the order in which stages are
/// visited (each op starts at max(stage free, dependency ready)), so a plain sweep until no
/// stage can move is exact.
schedule_timing execute(const pipeline_schedule& schedule, const std::vector<stage_cost>& costs,
                        int m) {
  const int p = schedule.stage_count();
  const auto P = static_cast<size_t>(p);
  constexpr double not_done = -1.0;
  // end_time[kind][s * m + i]
  std::vector<std::vector<double>> end_time(
      3, std::vector<double>(P * static_cast<size_t>(m), not_done));
  auto end_of = [&](op_kind kind, int s, int i) -> double& {
    return end_time[static_cast<size_t>(kind_index(kind))]
                   [static_cast<size_t>(s) * static_cast<size_t>(m) + static_cast<size_t>(i)];
  };

  // The op that must end before `op` on stage s may start, and the transfer after it.
  struct dependency {
    op_kind kind;
    int stage;
    double comm;
  };
  auto dependency_of = [&](int s, const schedule_op& op) -> dependency {
    switch (op.kind) {
    case op_kind::forward:
      if (s == 0)
        return {op_kind::forward, -1, 0.0};
      return {op_kind::forward, s - 1, costs[static_cast<size_t>(s - 1)].comm_to_next};
    case op_kind::backward_input:
      if (s == p - 1)
        return {op_kind::forward, s, 0.0};
      // A fused backward releases the input gradient only when the whole kernel ends.
      return {schedule.fused_backward ? op_kind::backward_weight : op_kind::backward_input, s + 1,
              costs[static_cast<size_t>(s)].comm_to_next};
    case op_kind::backward_weight:
      return {op_kind::backward_input, s, 0.0};
    }
    return {op_kind::forward, -1, 0.0};
  };

  schedule_timing t;
  t.ops.resize(P);
  std::vector<size_t> next(P, 0);
  std::vector<double> free_at(P, 0.0);
  size_t remaining = 0;
  for (const auto& ops : schedule.stages)
    remaining += ops.size();

  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const auto& ops = schedule.stages[static_cast<size_t>(s)];
      auto& k = next[static_cast<size_t>(s)];
      while (k < ops.size()) {
        const auto& op = ops[k];
        const auto dep = dependency_of(s, op);
        double ready = 0.0;
        if (dep.stage >= 0) {
          const double dep_end = end_of(dep.kind, dep.stage, op.micro);
          if (dep_end == not_done)
            break;
          ready = dep_end + dep.comm;
        }
        const double start = std::max(free_at[static_cast<size_t>(s)], ready);
        const double end = start + op_cost(costs[static_cast<size_t>(s)], op.kind);
        end_of(op.kind, s, op.micro) = end;
        free_at[static_cast<size_t>(s)] = end;
        t.ops[static_cast<size_t>(s)].push_back({op, start, end});
        ++k;
        --remaining;
        progress = true;
      }
    }
  }

  if (remaining > 0) {
    // Prefer a stage blocked on its own later op (B before its F, W before its B): that is
    // the root cause; otherwise the first blocked stage.
    int culprit = -1;
    for (int s = 0; s < p && culprit < 0; ++s) {
      const auto& ops = schedule.stages[static_cast<size_t>(s)];
      if (next[static_cast<size_t>(s)] < ops.size() &&
          dependency_of(s, ops[next[static_cast<size_t>(s)]]).stage == s)
        culprit = s;
    }
    for (int s = 0; s < p && culprit < 0; ++s)
      if (next[static_cast<size_t>(s)] < schedule.stages[static_cast<size_t>(s)].size())
        culprit = s;
    const auto k = next[static_cast<size_t>(culprit)];
    const auto& op = schedule.stages[static_cast<size_t>(culprit)][k];
    const auto dep = dependency_of(culprit, op);
    throw std::invalid_argument(where(culprit, op) + " (position " + std::to_string(k) +
                                ") deadlocks: it waits for " + op_letter(dep.kind) +
                                std::to_string(op.micro) + " on stage " +
                                std::to_string(dep.stage) + ", which can never run first");
  }
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
    int fb = 0; // F done, B not
    int bw = 0; // B done, W not
    for (const auto& o : ops) {
      t.busy[s] += o.end - o.start;
      if (o.op.kind == op_kind::forward)
        ++fb;
      else if (o.op.kind == op_kind::backward_input)
        --fb, ++bw;
      else
        --bw;
      t.peak_in_flight_fb[s] = std::max(t.peak_in_flight_fb[s], fb);
      t.peak_in_flight_fw[s] = std::max(t.peak_in_flight_fw[s], fb + bw);
      t.peak_bytes[s] = std::max(t.peak_bytes[s],
                                 fb * costs[s].activation_bytes + bw * costs[s].weight_grad_bytes);
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

} // namespace deepcee::runtime
