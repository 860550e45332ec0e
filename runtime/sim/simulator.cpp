#include "runtime/sim/simulator.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/schedule/op_readiness.hpp"
#include "runtime/sim/simulator_world.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <string>

namespace deepcee::runtime {

using sim_detail::link_rt;
using sim_detail::part;
using sim_detail::stage_rt;
using sim_detail::world;

namespace {

/// Mutable state of one stage during one step: its op list with the ops' readiness
/// (op_readiness.hpp), and when it is busy.
struct stage_run {
  op_list_run list;
  bool running = false;
  double free_at = 0;
  double op_start = 0;
  double trip = 0; ///< the running op's longest work-and-answer round trip
};

/// An op's end. Ends at the same time are processed in stage order (a stage has at most one
/// op running), so transfers that reach a shared link at the same time queue by sender
/// stage: an order the actor runtime's pipes reproduce without a global event queue.
struct event {
  double time;
  int stage;
  bool operator>(const event& o) const { return time != o.time ? time > o.time : stage > o.stage; }
};

/// One training step: compute and pipeline transfers (event driven), then all-reduce
/// buckets and the optimizer. Statistics accumulate into the result across steps.
class step_engine {
public:
  step_engine(world& w, const sim_options& options, sim_result& r, std::vector<double>& device_busy,
              std::vector<double>& device_ar, std::vector<double>& device_opt,
              std::vector<double>& stage_busy)
      : w_(w), opt_(options), r_(r), busy_(device_busy), ar_(device_ar), optim_(device_opt),
        stage_busy_(stage_busy) {}

  /// Runs a step from t0; returns the time the last device's optimizer ends.
  double run(double t0, std::vector<double>& stage_end);

private:
  void try_start(int s);
  void complete(int s, double t);
  double send(const part& pt, double t, const char* what, int micro);
  void trace(std::string name, int track, double start, double end) {
    if (opt_.trace && end >= start)
      r_.events.push_back({std::move(name), track, start, end});
  }

  world& w_;
  const sim_options& opt_;
  sim_result& r_;
  std::vector<double>& busy_;
  std::vector<double>& ar_;
  std::vector<double>& optim_;
  std::vector<double>& stage_busy_;
  std::vector<stage_run> runs_;
  std::priority_queue<event, std::vector<event>, std::greater<>> queue_;
};

double dev_op_time(const stage_rt& st, size_t d, op_kind k) {
  return k == op_kind::forward          ? st.dev_f[d]
         : k == op_kind::backward_input ? st.dev_b[d]
                                        : st.dev_w[d];
}

void step_engine::try_start(int s) {
  auto& run = runs_[static_cast<size_t>(s)];
  if (run.running || run.list.done())
    return;
  const double ready = run.list.next_ready_at();
  if (ready == stage_readiness::not_yet)
    return;
  run.op_start = std::max(run.free_at, ready);
  run.running = true;
  const auto& st = w_.stages[static_cast<size_t>(s)];
  const auto kind = run.list.next().kind;
  // The last device's answer: each device at its rate over the op (link_timeline.hpp), plus
  // the round trip of its work and answer when it is on another node than its stage.
  double dt = 0;
  run.trip = 0;
  for (size_t d = 0; d < st.devices.size(); ++d) {
    const double trip = w_.apart_round_trip(st, d, run.op_start);
    run.trip = std::max(run.trip, trip);
    dt = std::max(dt, w_.work_time(st.devices[d], run.op_start, dev_op_time(st, d, kind)) + trip);
  }
  queue_.push({run.op_start + dt, s});
}

double step_engine::send(const part& pt, double t, const char* what, int micro) {
  auto& link = w_.links[static_cast<size_t>(pt.route)];
  const auto& h = w_.histories[static_cast<size_t>(pt.pair)];
  double start = t;
  for (int k : pt.res)
    start = std::max(start, w_.resources[static_cast<size_t>(k)].free_at);
  const double drain = drain_duration(h, start, pt.bytes);
  for (int k : pt.res)
    w_.resources[static_cast<size_t>(k)].free_at = start + drain;
  link.bytes += pt.bytes;
  link.busy += drain;
  const double arrival = start + drain + params_at(h, start).latency_s;
  if (opt_.record_transfers)
    r_.transfers.push_back({pt.from, pt.to, pt.bytes, start, start + drain, arrival});
  if (opt_.trace)
    trace(std::string(what) + std::to_string(micro), r_.device_count + pt.route, start,
          start + drain);
  return arrival;
}

void step_engine::complete(int s, double t) {
  auto& run = runs_[static_cast<size_t>(s)];
  const auto& st = w_.stages[static_cast<size_t>(s)];
  const auto op = run.list.next();
  run.running = false;
  run.free_at = t;
  // The stage's compute (what the adapter's monitor reads): the op's span less its round
  // trip, as the runtime's adapter counts it (runtime::stage_compute_s).
  stage_busy_[static_cast<size_t>(s)] += stage_compute_s(t - run.op_start, run.trip);
  for (size_t d = 0; d < st.devices.size(); ++d) {
    const double dt = w_.work_time(st.devices[d], run.op_start, dev_op_time(st, d, op.kind));
    busy_[static_cast<size_t>(st.devices[d])] += dt;
    if (opt_.trace)
      trace(to_string(op), st.devices[d], run.op_start, run.op_start + dt);
  }
  const auto send_all = [&](const std::vector<part>& parts, int to, op_input input,
                            const char* what) {
    double arrive = t;
    for (const auto& pt : parts)
      arrive = std::max(arrive, send(pt, t, what, op.micro));
    runs_[static_cast<size_t>(to)].list.readiness().input_arrived(input, op.micro, arrive);
    try_start(to);
  };
  switch (run.list.complete_next(t)) {
  case tensor_flow::activation_to_next:
    send_all(st.act_parts, st.next, op_input::activation, "send act m");
    break;
  case tensor_flow::gradient_to_previous:
    send_all(st.grad_parts, st.prev, op_input::gradient, "send grad m");
    break;
  case tensor_flow::none:
    break;
  }
  try_start(s);
}

} // namespace

namespace {

double step_engine::run(double t0, std::vector<double>& stage_end) {
  const size_t n = w_.stages.size();
  runs_.assign(n, {});
  sim_detail::begin_step(w_, opt_, r_, t0, optim_);
  for (size_t s = 0; s < n; ++s) {
    const auto& st = w_.stages[s];
    const auto& schedule = w_.schedules[static_cast<size_t>(st.schedule)];
    const int m = w_.micro_batches[static_cast<size_t>(st.pipeline)];
    const double begin = w_.step_begin(st, t0);
    runs_[s].free_at = begin;
    runs_[s].list = op_list_run(schedule.stages[static_cast<size_t>(st.stage)],
                                {st.prev < 0, st.next < 0, schedule.fused_backward}, m, begin);
  }
  for (size_t s = 0; s < n; ++s)
    try_start(static_cast<int>(s));
  while (!queue_.empty()) {
    const auto e = queue_.top();
    queue_.pop();
    complete(e.stage, e.time);
  }
  stage_end.assign(n, t0);
  for (size_t s = 0; s < n; ++s) {
    const auto& st = w_.stages[s];
    if (!runs_[s].list.done())
      throw std::logic_error("simulator: pipeline " + std::to_string(st.pipeline) + " stage " +
                             std::to_string(st.stage) + " deadlocked");
    stage_end[s] = runs_[s].free_at;
  }
  return sim_detail::finish_step(w_, opt_, r_, stage_end, ar_);
}

} // namespace

sim_result simulate(const cluster& c, const model_spec& model, const profile_table& profile,
                    const plan& p, const link_timeline& timeline, const sim_options& options) {
  validate_plan(p, static_cast<int>(c.devices.size()), "plan");
  const auto& mc = p.model;
  const auto& pc = model.config;
  if (mc.n_layer != pc.n_layer || mc.d_model != pc.d_model || mc.n_head != pc.n_head ||
      mc.context != pc.context || mc.vocab != pc.vocab)
    fail_input("plan", 0, "the plan's model differs from the model it is simulated with");
  if (options.steps < 1)
    throw std::invalid_argument("simulate: steps must be at least 1");
  world w = sim_detail::build_world(c, model, profile, p, timeline, options.greedy);
  sim_result r;
  r.device_count = static_cast<int>(c.devices.size());
  const size_t nd = c.devices.size();
  std::vector<double> busy(nd, 0.0), ar(nd, 0.0), opt(nd, 0.0), stage_end, first_end;
  std::vector<double> stage_busy(w.stages.size(), 0.0);
  double t = options.start_s;
  // Step events become times as their steps start (link_timeline::resolve_steps).
  std::vector<double> step_starts;
  link_timeline resolved;
  for (int k = 0; k < options.steps; ++k) {
    if (timeline.has_step_events()) {
      step_starts.push_back(t);
      resolved = timeline.resolve_steps(step_starts);
      w.set_timeline(resolved);
    }
    step_engine engine(w, options, r, busy, ar, opt, stage_busy);
    const double end = engine.run(t, stage_end);
    if (k == 0)
      first_end = stage_end;
    r.step_times_s.push_back(end - t);
    t = end;
  }
  sim_detail::fill_stats(w, p, profile, r, busy, ar, opt, first_end, options.start_s,
                         t - options.start_s);
  for (size_t s = 0; s < w.stages.size(); ++s) {
    const auto& st = w.stages[s];
    r.stages[static_cast<size_t>(st.pipeline)][static_cast<size_t>(st.stage)].compute_s =
        stage_busy[s] / static_cast<double>(options.steps);
  }
  return r;
}

} // namespace deepcee::runtime
