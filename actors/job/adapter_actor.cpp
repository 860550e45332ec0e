#include "actors/job/adapter_actor.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include "runtime/adapt/path_estimates.hpp"
#include "runtime/adapt/stage_compute.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/simulator.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <utility>

/// The adapter's order of events: link samples arrive while a step runs (from the stages'
/// link layers and the pipes), the step's result after it ends. A drift that a sample of
/// step k reveals is answered at once, and the coordinator puts the answer in force at the
/// first step that has not started (k + 1 when the answer comes before it starts).
namespace deepcee::actors {

namespace {

using self_ptr = adapter_actor::stateful_pointer<adapter_state>;

/// The allocation of `next` (a plan of the running layout) as a rebalance from step `at`.
messages::rebalance rebalance_of(const runtime::plan& next, int64_t at) {
  const auto a = runtime::allocation_of(next);
  return {.micro_batches = a.micro_batches,
          .effective_step = at,
          .samples = a.samples,
          .compressions = a.compressions};
}

/// Every link the plan in force sends on, as `links` answers them (runtime::link_reports).
std::vector<runtime::link_report> link_summaries(const adapter_state& st) {
  if (!st.adapter)
    return {};
  return runtime::link_reports(st.adapter->monitor(), st.links, st.in_force);
}

/// The ops of step `r` with their stages, as runtime::stage_compute reads them.
std::vector<runtime::op_span> op_spans(const step_result& r) {
  std::vector<runtime::op_span> out;
  for (size_t k = 0; k < r.ops.size() && k < r.op_stage.size(); ++k)
    out.push_back({.stage = r.op_stage[k], .start_s = r.ops[k].start, .end_s = r.ops[k].end});
  return out;
}

void keep(adapter_state& st, adapt_record r) {
  r.sequence = ++st.decided;
  spdlog::info("{}", describe(r));
  st.decisions.push_back(std::move(r));
  while (st.decisions.size() > st.options.max_decisions)
    st.decisions.pop_front();
}

/// The kept record of decision `sequence`, if it is still among the recent ones.
adapt_record* find_record(adapter_state& st, int64_t sequence) {
  for (auto& r : st.decisions)
    if (r.sequence == sequence)
      return &r;
  return nullptr;
}

/// Orders `next` from the coordinator for the step after the latest one seen: a rebalance
/// when it keeps the layout of the plan ordered last, else a re-plan. `r` is kept at once, so
/// that the log's order is the order of decisions. The coordinator's answer sets the step it
/// takes effect at, a later one when that step has started meanwhile.
void order(self_ptr self, const runtime::plan& next, adapt_record r) {
  auto& st = self->state;
  const bool replan = !runtime::same_layout(st.latest, next);
  const auto at = st.last_step + 1;
  const auto msg = rebalance_of(next, at);
  if (!replan)
    r.allocation = msg;
  st.latest = next;
  r.effective_step = at;
  keep(st, std::move(r));
  const auto sequence = st.decided;
  const auto answered = [self, next, sequence](int64_t in_force) {
    auto& s = self->state;
    s.ordered.put(in_force, next);
    if (auto* kept = find_record(s, sequence); kept && kept->effective_step != in_force) {
      kept->effective_step = in_force;
      spdlog::info("adapter: decision {} in force from step {}", sequence, in_force);
    }
  };
  const auto refused = [self, sequence](caf::error& e) {
    auto& s = self->state;
    const auto why = self->system().render(e);
    spdlog::warn("adapter: decision {} not applied: {}", sequence, why);
    s.latest = s.ordered.empty() ? s.in_force : s.ordered.entries().rbegin()->second;
    if (auto* kept = find_record(s, sequence)) {
      kept->effective_step = -1;
      kept->reason += "; not applied: " + why;
    }
  };
  if (replan)
    self->request(st.coordinator, caf::infinite,
                  replan_order{.plan = next,
                               .effective_step = at,
                               .job = nullptr,
                               .bytes = 0,
                               .move_s = 0,
                               .moves_on = std::make_shared<const runtime::cluster>(
                                   runtime::move_cluster(st.adapter->monitor()))})
        .then(answered, refused);
  else
    self->request(st.coordinator, caf::infinite, msg).then(answered, refused);
}

/// What the monitor sees drifted, by name ("link 2->4", "device 3"), each with its figures
/// ("bandwidth x0.10 latency x1.00", "x2.00").
std::map<std::string, std::string> drifted(const runtime::environment_monitor& m) {
  std::map<std::string, std::string> out;
  for (const auto& l : m.links())
    if (l.drifted)
      out[fmt::format("link {}->{}", l.from, l.to)] = fmt::format(
          "bandwidth x{:.2f} latency x{:.2f}", l.estimated.bandwidth_Bps / l.assumed.bandwidth_Bps,
          l.estimated.latency_s / l.assumed.latency_s);
  for (const auto& d : m.devices())
    if (d.drifted)
      out[fmt::format("device {}", d.device)] = fmt::format("x{:.2f}", d.slowdown);
  return out;
}

/// The drift for a decision's reason: "link 2->4 bandwidth x0.10 latency x1.00, device 3
/// x2.00", or "nothing drifted", then what has come back since the last decision
/// ("back: link 2->4").
std::string drift_reason(adapter_state& st) {
  const auto now = drifted(st.adapter->monitor());
  std::string out, back;
  for (const auto& [name, figures] : now)
    out += (out.empty() ? "" : ", ") + name + " " + figures;
  for (const auto& name : st.drifted_names)
    if (!now.count(name))
      back += (back.empty() ? "" : ", ") + name;
  st.drifted_names.clear();
  for (const auto& entry : now)
    st.drifted_names.push_back(entry.first);
  if (out.empty())
    out = "nothing drifted";
  return back.empty() ? out : out + " (back: " + back + ")";
}

/// The policy's decision `d` at the end of the latest step: logged, and ordered unless it
/// keeps the plan.
void decided(self_ptr self, const runtime::adapt_decision& d) {
  auto& st = self->state;
  auto r = record_of(d, st.last_step);
  r.reason = drift_reason(st) + ": " + r.reason;
  if (d.kind == runtime::decision_kind::keep) {
    keep(st, std::move(r));
    return;
  }
  const bool moves = !runtime::same_layout(st.latest, d.next);
  if ((moves && !st.options.policy.allow_replan) || !st.coordinator) {
    r.reason += st.coordinator ? "; not applied: a re-plan moves layers, which this job does "
                                 "not do (a node of it cannot spawn a new plan's part)"
                               : "; not applied: no coordinator";
    keep(st, std::move(r));
    return;
  }
  order(self, d.next, std::move(r));
}

/// Whether the job's link times are the emulated cluster's (virtual, dry and shaped wall
/// time), reported by their senders as link_samples; real links are reported by receivers.
bool emulated_links(const job_context& job) {
  return !job.wall() || job.shaping();
}

/// A sample in the run's statistics and trace.
void record(adapter_state& st, const link_sample& s) {
  st.links.add(s.from, s.to, s.bytes);
  if (st.samples.size() < st.max_samples)
    st.samples.push_back(s);
}

void on_sample(self_ptr self, const link_sample& s) {
  auto& st = self->state;
  record(st, s);
  if (!st.adapter || !emulated_links(*st.job))
    return;
  st.last_step = std::max(st.last_step, s.step);
  st.adapter->observe({s.from, s.to, s.bytes, s.start, s.drained, s.end});
}

/// The node that runs stage `stage` of pipeline `pipeline` in `job`'s layout, or -1.
int stage_node(const job_context& job, int pipeline, int stage) {
  const auto& pipes = job.plan.pipelines;
  if (pipeline < 0 || pipeline >= static_cast<int>(pipes.size()) || stage < 0 ||
      stage >= job.stage_count(pipeline))
    return -1;
  return job.layout.stage_node.at(static_cast<size_t>(job.flat_index(pipeline, stage)));
}

/// The parts of one message between node processes, as its receiver saw it (wall time).
void on_message(self_ptr self, const std::vector<link_sample>& parts) {
  auto& st = self->state;
  runtime::real_message m;
  for (const auto& s : parts) {
    record(st, s);
    m.parts.push_back({s.from, s.to, s.bytes});
    m.send_s = s.send_time;
    m.arrival_s = s.end;
    st.last_step = std::max(st.last_step, s.step);
  }
  if (!st.adapter || !st.real || parts.empty())
    return;
  // Sent by the first part's stage to its neighbour, between those stages' nodes (a message
  // of a plan no longer in force is left out).
  const auto& s = parts.front();
  const int to = s.kind == messages::tensor_kind::activation ? s.stage + 1 : s.stage - 1;
  m.from_node = stage_node(*st.job, s.pipeline, s.stage);
  m.to_node = stage_node(*st.job, s.pipeline, to);
  if (m.from_node < 0 || m.to_node < 0)
    return;
  for (const auto& o : st.real->observe(m))
    st.adapter->observe(o);
}

/// "link 0->1 3x1024 B, device 2 3 ops": what a probe round sends.
std::string describe(const runtime::probe_round& round) {
  std::string what;
  for (const auto& l : round.links)
    what += fmt::format("{}link {}->{} {}x{:.0f} B", what.empty() ? "" : ", ", l.from, l.to,
                        l.transfers, l.bytes);
  for (const auto& d : round.devices)
    what += fmt::format("{}device {} {} ops", what.empty() ? "" : ", ", d.device, d.ops);
  return what;
}

/// Logs a probe round at info, the rounds that repeat it at debug; every real round at info,
/// since it is traffic on the job's network.
void log_round(adapter_state& st, int64_t step, std::string what, const std::string& holding,
               bool real) {
  spdlog::log(what == st.probed && !real ? spdlog::level::debug : spdlog::level::info,
              "adapter: step {}: probes {} ({})", step, what, holding);
  st.probed = std::move(what);
}

/// What a real probe round on one link saw: each message that arrived, as a message of the
/// plan between those nodes would be (runtime::wall_transfers), to the monitor.
void observe_real_probe(adapter_state& st, const runtime::link_probe& l, int from_node, int to_node,
                        const probe_times& t) {
  for (size_t k = 0; k < t.send_s.size() && k < t.arrival_s.size(); ++k) {
    if (!std::isfinite(t.arrival_s[k]))
      continue;
    const runtime::real_message m{.from_node = from_node,
                                  .to_node = to_node,
                                  .parts = {{.from = l.from, .to = l.to, .bytes = l.bytes}},
                                  .send_s = t.send_s[k],
                                  .arrival_s = t.arrival_s[k]};
    spdlog::debug("adapter: probe link {}->{}: {:.0f} B in {:.4g} s", l.from, l.to, l.bytes,
                  t.arrival_s[k] - t.send_s[k]);
    for (const auto& o : st.real->observe(m))
      st.adapter->observe(o);
  }
}

/// Each link probe of `round` as real messages between the two devices' node processes
/// (wall time). Each message is at least large enough to show a drift over the node pair's
/// noise (runtime::wall_transfers::informative_bytes, with half again as margin), at most
/// probe_options::max_bytes. The sender's replanner sends them on the job's connection to
/// the receiver's, which times their arrival as a stage times a tensor's. They run while the
/// next step does: nothing waits for them, and a peer that does not answer within its bound
/// (node_replanner.hpp) leaves its messages out. A link still being probed gets no second
/// round meanwhile.
runtime::probe_round probe_links(self_ptr self, runtime::probe_round round) {
  auto& st = self->state;
  const auto& c = st.job->cluster->hardware();
  const auto replanner = [&](int node) {
    const auto k = static_cast<size_t>(node);
    return k < st.options.replanners.size() ? st.options.replanners[k] : nullptr;
  };
  const auto& limits = st.options.probes;
  std::vector<runtime::link_probe> sent;
  for (auto l : round.links) {
    const int from_node = c.devices.at(static_cast<size_t>(l.from)).node;
    const int to_node = c.devices.at(static_cast<size_t>(l.to)).node;
    auto sender = replanner(from_node);
    auto receiver = replanner(to_node);
    if (from_node == to_node || !sender || !receiver || st.probing.count({l.from, l.to}))
      continue;
    const double floor = 1.5 * st.real->informative_bytes(
                                   from_node, to_node, c.link_between(l.from, l.to).bandwidth_Bps);
    l.bytes = std::round(std::clamp(std::max(l.bytes, floor), limits.min_bytes, limits.max_bytes));
    st.probing.insert({l.from, l.to});
    sent.push_back(l);
    self->request(caf::actor_cast<node_replanner_actor>(sender), std::chrono::seconds(30),
                  probe_atom_v, std::move(receiver), static_cast<int32_t>(l.transfers),
                  static_cast<int64_t>(l.bytes))
        .then(
            [self, l, from_node, to_node](const probe_times& t) {
              self->state.probing.erase({l.from, l.to});
              observe_real_probe(self->state, l, from_node, to_node, t);
            },
            [self, l](caf::error& e) {
              self->state.probing.erase({l.from, l.to});
              spdlog::debug("adapter: probe link {}->{}: {}", l.from, l.to,
                            self->system().render(e));
            });
  }
  round.links = std::move(sent);
  round.devices.clear();
  return round;
}

/// Runs the active probes due at the boundary after step `r`
/// (runtime::step_adapter::probes_due) on the plan that runs the next step. In virtual and
/// dry time they run on the job's link model at the step's end, and the monitor reads them.
/// Returns how long they hold the next step's start. In wall time across node processes the
/// link probes are real (probe_links) and hold nothing; in one process nothing probes.
double probe(self_ptr self, const step_result& r) {
  auto& st = self->state;
  const auto round = st.adapter->probes_due(st.in_force, st.latest, r.end_s - r.start_s);
  if (round.empty())
    return 0;
  if (st.real) {
    const auto sent = probe_links(self, round);
    if (!sent.empty())
      log_round(st, r.step, describe(sent), "real, holding nothing", true);
    return 0;
  }
  if (st.job->wall())
    return 0;
  const auto& vc = *st.job->cluster;
  const auto seen =
      runtime::run_probes(vc.hardware(), vc.profile(), st.latest, st.script, round, r.end_s);
  st.adapter->observe_probes(seen);
  log_round(st, r.step, describe(round), fmt::format("holding the next step {:.3g} s", seen.hold_s),
            false);
  return seen.hold_s;
}

/// The step ended: each stage's compute (in wall time against the devices' first steps),
/// then the policy if a drift began or ended (runtime::step_adapter::end_step), then
/// the probes of the boundary. Returns how long they hold the next step.
double on_step(self_ptr self, const step_result& r) {
  auto& st = self->state;
  st.last_step = std::max(st.last_step, r.step);
  for (const auto& u : r.injected)
    st.script = runtime::merged(st.script, u.script);
  if (!st.adapter)
    return 0;
  if (auto ran = st.ordered.take_due(r.step)) // the plan that ran this step
    st.in_force = std::move(*ran);
  const auto compute =
      runtime::stage_compute(st.job->cluster->hardware(), st.in_force, op_spans(r));
  if (auto d = st.adapter->end_step(st.in_force, compute, st.latest, st.options.react))
    decided(self, *d);
  return st.options.react ? probe(self, r) : 0.0;
}

/// adapt_to: `next` from step `at` on as a decision of kind "ordered" (kept once the
/// coordinator answers with the step it takes effect at), through `ask` (the order).
template <class Ask>
caf::result<int64_t> ordered_by_caller(self_ptr self, const runtime::plan& next, int64_t at,
                                       Ask ask) {
  auto& st = self->state;
  auto promise = self->make_response_promise<int64_t>();
  adapt_record rec;
  rec.step = st.last_step;
  rec.kind = "ordered";
  rec.reason = "adapt_to from step " + std::to_string(at);
  st.latest = next;
  ask().then(
      [self, rec, next, promise](int64_t in_force) mutable {
        rec.effective_step = in_force;
        self->state.ordered.put(in_force, next);
        keep(self->state, rec);
        promise.deliver(in_force);
      },
      [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

/// adapt_to of an allocation of the running layout (a rebalance, resplit or compression).
caf::result<int64_t> adapt_to_allocation(self_ptr self, rebalance r) {
  auto& st = self->state;
  if (!st.coordinator || !st.job)
    return make_error(messages::error_code::internal, "adapter: no job to adapt");
  runtime::plan next;
  try {
    next = st.job->plan_after(r);
  } catch (const std::exception& e) {
    return make_error(messages::error_code::bad_input, std::string("adapt_to: ") + e.what());
  }
  const auto at = r.effective_step;
  return ordered_by_caller(self, next, at, [self, r] {
    return self->request(self->state.coordinator, caf::infinite, r);
  });
}

/// adapt_to of a plan that moves layers: a re-plan.
caf::result<int64_t> adapt_to_plan(self_ptr self, replan_order r) {
  auto& st = self->state;
  if (!st.coordinator || !st.job)
    return make_error(messages::error_code::internal, "adapter: no job to adapt");
  if (!r.moves_on && st.adapter)
    r.moves_on =
        std::make_shared<const runtime::cluster>(runtime::move_cluster(st.adapter->monitor()));
  const auto next = r.plan;
  const auto at = r.effective_step;
  return ordered_by_caller(self, next, at, [self, r] {
    return self->request(self->state.coordinator, caf::infinite, r);
  });
}

/// A re-plan is in force: the adapter reads the new job's stages, and its monitor expects
/// the new plan's op times (its link and device estimates stay).
void follow_replan(self_ptr self, replan_order r) {
  auto& st = self->state;
  if (!r.job)
    return;
  st.job = std::move(r.job);
  st.latest = r.plan;
  st.in_force = r.plan;
  st.ordered.drop_through(r.effective_step);
  if (r.survivors && st.adapter)
    st.adapter->rebase(r.plan);
  spdlog::info("adapter: following the re-plan in force from step {} ({:.0f} bytes moved in "
               "{:.4g} s)",
               r.effective_step, r.bytes, r.move_s);
}

adapter_actor::behavior_type adapter_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                              adapter_options options) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.options = std::move(options);
  if (job) {
    st.latest = job->plan;
    st.in_force = job->plan;
    const auto& vc = *job->cluster;
    // Real links join node processes; one process's transfers cross none. Real op times
    // are the host's, compared with the devices' own first steps.
    const bool real_links = job->wall() && !job->shaping() && !job->layout.empty();
    st.adapter.emplace(vc.hardware(), vc.model(), vc.profile(), job->plan,
                       real_links ? st.options.real_link_band : st.options.band, st.options.window,
                       st.options.policy, st.options.probes);
    st.script = vc.timeline();
    if (real_links)
      st.real.emplace(
          vc.hardware(), st.options.clock_error_s,
          runtime::wall_transfer_options{.distinguishable = st.options.real_link_band.enter_low,
                                         .drift_samples = st.options.real_link_band.min_samples});
    if (job->wall())
      st.adapter->calibrate_devices(st.options.wall_device_band);
  }
  st.job = std::move(job);
  return {
      [self](const link_sample& s) { on_sample(self, s); },
      [self](const std::vector<link_sample>& parts) { on_message(self, parts); },
      [self](const step_result& r) { return on_step(self, r); },
      [self](links_atom) { return link_summaries(self->state); },
      [self](samples_atom) { return self->state.samples; },
      [self](decisions_atom) {
        const auto& d = self->state.decisions;
        return std::vector<adapt_record>(d.begin(), d.end());
      },
      [self](wire_atom, const caf::strong_actor_ptr& coordinator) {
        self->state.coordinator = caf::actor_cast<coordinator_actor>(coordinator);
      },
      [self](rebalance& r) { return adapt_to_allocation(self, std::move(r)); },
      [self](replan_order& r) -> caf::result<int64_t> {
        auto& st = self->state;
        if (st.job && runtime::same_layout(st.latest, r.plan))
          return adapt_to_allocation(self, rebalance_of(r.plan, r.effective_step));
        return adapt_to_plan(self, std::move(r));
      },
      [self](move_atom, replan_order& r) { follow_replan(self, std::move(r)); },
  };
}

} // namespace

adapt_record record_of(const runtime::adapt_decision& d, int64_t step) {
  adapt_record r;
  r.step = step;
  r.kind = std::string(runtime::to_string(d.kind));
  r.reason = d.reason;
  r.old_step_s = d.old_step_s;
  r.new_step_s = d.new_step_s;
  r.predicted_gain = d.predicted_gain();
  return r;
}

std::string describe(const adapt_record& r) {
  const auto predicted = r.old_step_s > 0 || r.new_step_s > 0
                             ? fmt::format(", predicted step {:.4g} s -> {:.4g} s, gain {:.2f}x",
                                           r.old_step_s, r.new_step_s, r.predicted_gain)
                             : std::string();
  const auto from = r.effective_step >= 0
                        ? ", in force from step " + std::to_string(r.effective_step)
                        : std::string();
  return fmt::format("adapter: step {}: {} ({}){}{}", r.step, r.kind, r.reason, predicted, from);
}

adapter_actor spawn_adapter(caf::actor_system& sys, std::shared_ptr<job_context> job,
                            adapter_options options) {
  return sys.spawn(adapter_behavior, std::move(job), std::move(options));
}

} // namespace deepcee::actors
