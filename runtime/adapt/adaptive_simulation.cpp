#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/adapt/step_adapter.hpp"

#include "runtime/base/splitmix.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/simulator.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace deepcee::runtime {

namespace {

/// Uniform in [1 - noise, 1 + noise], a pure function of (seed, index).
double noise_factor(double noise, uint64_t seed, uint64_t index) {
  const double u = static_cast<double>(splitmix64(seed ^ splitmix64(index)) >> 11) * 0x1.0p-53;
  return 1 + noise * (2 * u - 1);
}

link_observation observe_at(const cluster& c, const link_timeline& timeline, int from, int to,
                            double bytes, double send_s) {
  const auto history = timeline.history(c, from, to);
  const double drain = drain_duration(history, send_s, bytes);
  link_observation o{from, to, bytes, send_s, send_s + drain, 0};
  o.arrival_s = o.drained_s + params_at(history, send_s).latency_s;
  return o;
}

} // namespace

std::vector<link_observation> observed_transfers(const cluster& c, const model_spec& model,
                                                 const plan& p, const link_timeline& timeline,
                                                 double start_s, double step_s) {
  std::vector<link_observation> out;
  for (const auto& pipe : p.pipelines) {
    const int m = pipe.micro_batches;
    for (size_t s = 0; s + 1 < pipe.stages.size(); ++s) {
      const auto& a = pipe.stages[s];
      const auto& b = pipe.stages[s + 1];
      for (const auto& rows : rows_between(a.samples, b.samples)) {
        const int from = a.devices[rows.from], to = b.devices[rows.to];
        const double bytes =
            static_cast<double>(model.transfer_bytes(rows.samples, a.send_compression));
        for (int i = 0; i < m; ++i) {
          const double fwd = start_s + step_s * (i + 0.25) / m;
          const double bwd = start_s + step_s * (i + 0.75) / m;
          out.push_back(observe_at(c, timeline, from, to, bytes, fwd));
          out.push_back(observe_at(c, timeline, to, from, bytes, bwd));
        }
      }
    }
  }
  return out;
}

namespace {

/// The static run: the plan as it starts, through the whole timeline. A kill of a node it
/// uses is recovered from as the coordinator does, adapter or not; from there on the run
/// goes step by step (static_recovered_steps).
std::vector<adaptive_step> static_recovered_steps(const cluster& c, const model_spec& model,
                                                  const profile_table& profile, const plan& p,
                                                  const link_timeline& timeline,
                                                  const adaptive_options& options);

std::vector<adaptive_step> static_steps(const cluster& c, const model_spec& model,
                                        const profile_table& profile, const plan& p,
                                        const link_timeline& timeline,
                                        const adaptive_options& options) {
  sim_options all;
  all.steps = options.steps;
  sim_result fixed;
  try {
    fixed = simulate(c, model, profile, p, timeline, all);
  } catch (const job_stopped&) {
    return static_recovered_steps(c, model, profile, p, timeline, options);
  }
  const double batch = p.global_batch();
  std::vector<adaptive_step> out;
  double t = 0;
  for (int k = 0; k < options.steps; ++k) {
    const double dt = fixed.step_times_s[static_cast<size_t>(k)];
    out.push_back({k, t, dt, batch / dt, std::nullopt});
    t += dt;
  }
  return out;
}

/// What the monitor sees of a transfer on a noisy network: its drain and its latency each
/// scaled by a seeded factor.
class noisy_view {
public:
  explicit noisy_view(const adaptive_options& options) : options_(options) {}

  link_observation operator()(link_observation o) {
    if (options_.sample_noise <= 0)
      return o;
    const double drain = (o.drained_s - o.start_s) * next_factor();
    const double latency = (o.arrival_s - o.drained_s) * next_factor();
    o.drained_s = o.start_s + drain;
    o.arrival_s = o.drained_s + latency;
    return o;
  }

private:
  double next_factor() { return noise_factor(options_.sample_noise, options_.seed, index_++); }

  const adaptive_options& options_;
  uint64_t index_ = 0;
};

/// How long `steps` steps of `p` take from `start_s` under `script`: a rollback's replay.
double replay_s(const cluster& c, const model_spec& model, const profile_table& profile,
                const plan& p, const link_timeline& script, double start_s, int steps) {
  if (steps <= 0)
    return 0;
  sim_options so;
  so.steps = steps;
  so.start_s = start_s;
  const auto r = simulate(c, model, profile, p, script, so);
  return std::accumulate(r.step_times_s.begin(), r.step_times_s.end(), 0.0);
}

/// One step of `current` from `one.start_s`, after `steps_done` steps, as the coordinator
/// runs it: where the script kills a node it uses, the step starts again on the survivors'
/// plan (`current` becomes it, and `one.start_s` its start, after the steps a rollback to a
/// snapshot runs again), once per kill.
struct step_run : sim_result {
  bool recovered = false;
};
step_run simulate_or_recover(const cluster& c, const model_spec& model,
                             const profile_table& profile, plan& current,
                             const link_timeline& script, sim_options& one, std::vector<int>& lost,
                             double step_start_s, int steps_done, const adaptive_options& options) {
  step_run out;
  for (;;) {
    try {
      static_cast<sim_result&>(out) = simulate(c, model, profile, current, script, one);
      return out;
    } catch (const job_stopped&) {
      if (!first_kill(script, c, current, lost))
        throw;
    }
    const kill_moment at{step_start_s, options.liveness_s, steps_done, options.snapshot_every};
    auto r = recover_from_kill(c, profile, current, script, lost, at, options.policy.planner);
    current = std::move(r.next);
    one.start_s =
        r.restart_s + replay_s(c, model, profile, current, script, r.restart_s, r.replayed);
    out.recovered = true;
  }
}

std::vector<adaptive_step> static_recovered_steps(const cluster& c, const model_spec& model,
                                                  const profile_table& profile, const plan& p,
                                                  const link_timeline& timeline,
                                                  const adaptive_options& options) {
  auto [in_force, waiting] = split_step_events(timeline);
  plan current = p;
  std::vector<int> lost;
  std::vector<adaptive_step> out;
  double t = 0;
  for (int k = 0; k < options.steps; ++k) {
    sim_options one;
    one.start_s = t;
    auto reached = take_injected(waiting, k, one.start_s);
    in_force = merged(in_force, reached.due);
    waiting = std::move(reached.pending);
    const auto r =
        simulate_or_recover(c, model, profile, current, in_force, one, lost, t, k, options);
    const double dt = one.start_s + r.step_time_s - t;
    out.push_back({k, t, dt, p.global_batch() / dt, std::nullopt});
    t += dt;
  }
  return out;
}

} // namespace

adaptive_result simulate_adaptive(const cluster& c, const model_spec& model,
                                  const profile_table& profile, const plan& p,
                                  const link_timeline& timeline, const adaptive_options& options) {
  if (options.steps < 1)
    throw std::invalid_argument("simulate_adaptive: steps must be at least 1");
  adaptive_result out;
  out.global_batch = p.global_batch();
  const double batch = out.global_batch;
  out.fixed = static_steps(c, model, profile, p, timeline, options);

  // A step event happens when the adapted run starts that step's ops (after a re-plan's
  // moves), by the rule the coordinator follows at its step boundaries (take_injected).
  auto [in_force, waiting] = split_step_events(timeline);
  step_adapter adapter(c, model, profile, p, options.band, 9, options.policy, options.probes);
  plan current = p;
  std::vector<int> lost; // nodes the script killed
  std::optional<adapt_decision> pending;
  noisy_view seen(options);
  double t = 0;
  double hold_s = 0; // the probes sent at the next step's start
  for (int k = 0; k < options.steps; ++k) {
    adaptive_step step;
    step.step = k;
    step.start_s = t;
    double move_s = 0;
    if (pending) {
      // The moves as the coordinator charges them (coordinator_replan: plan_state_moves on
      // the links under the script in force, after the probes), not the policy's estimate
      // on the estimated cluster.
      if (!same_layout(current, pending->next))
        move_s = plan_state_moves(c, model, current, pending->next, in_force, t + hold_s).seconds;
      current = pending->next;
      pending.reset();
    }
    sim_options one;
    one.start_s = t + hold_s + move_s; // as the coordinator: the probes' hold, then the moves
    one.record_transfers = true;
    auto reached = take_injected(waiting, k, one.start_s);
    in_force = merged(in_force, reached.due);
    waiting = std::move(reached.pending);
    auto r = simulate_or_recover(c, model, profile, current, in_force, one, lost, t, k, options);
    if (r.recovered) {
      adapter.rebase(current);
      pending.reset();
    }
    // The transfers as the runtime's pipes and stages report them, in the order sent.
    for (const auto& x : r.transfers)
      adapter.observe(seen(x));
    std::vector<std::vector<double>> compute(r.stages.size());
    for (size_t pi = 0; pi < r.stages.size(); ++pi)
      for (const auto& st : r.stages[pi])
        compute[pi].push_back(st.compute_s);
    step.step_s = one.start_s + r.step_time_s - t;
    step.probe_hold_s = hold_s;
    step.samples_per_s = batch / step.step_s;
    if (auto d = adapter.end_step(current, compute, current)) {
      if (d->kind != decision_kind::keep)
        pending = *d;
      step.decision = std::move(*d);
    }
    t += step.step_s;
    // The probes of the boundary after this step, on the plan that runs the next one.
    const plan& next = pending ? pending->next : current;
    hold_s = 0;
    if (const auto round = adapter.probes_due(current, next, step.step_s); !round.empty()) {
      auto probed = run_probes(c, profile, next, in_force, round, t);
      for (auto& o : probed.transfers)
        o = seen(o);
      adapter.observe_probes(probed);
      hold_s = probed.hold_s;
    }
    out.adaptive.push_back(std::move(step));
  }
  return out;
}

} // namespace deepcee::runtime
