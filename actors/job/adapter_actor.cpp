#include "actors/job/adapter_actor.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include "runtime/plan/plan_allocation.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

/// The adapter's order of events: link samples arrive while a step runs (from the stages'
/// link layers and the pipes), the step's result after it ends. A drift that a sample of
/// step k reveals is answered at once, and the coordinator puts the answer in force at the
/// first step that has not started (k + 1 when the answer comes before it starts).
namespace deepcee::actors {

namespace {

using self_ptr = adapter_actor::stateful_pointer<adapter_state>;

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

/// Orders `next` (a plan of the job's layout) from the coordinator for the step after the
/// latest one seen, and keeps `r` at once (the log's order is the order of decisions); the
/// coordinator's answer sets the step it takes effect at (a later one when that step has
/// started meanwhile).
void order(self_ptr self, const runtime::plan& next, adapt_record r) {
  auto& st = self->state;
  const auto a = runtime::allocation_of(next);
  messages::rebalance msg{a.micro_batches, st.last_step + 1, a.samples, a.compressions};
  st.latest = next;
  r.effective_step = msg.effective_step;
  r.allocation = msg;
  keep(st, std::move(r));
  const auto sequence = st.decided;
  self->request(st.coordinator, caf::infinite, std::move(msg))
      .then(
          [=](int64_t at) {
            auto& s = self->state;
            s.ordered[at] = next;
            if (auto* kept = find_record(s, sequence); kept && kept->effective_step != at) {
              kept->effective_step = at;
              spdlog::info("adapter: decision {} in force from step {}", sequence, at);
            }
          },
          [=](caf::error& e) {
            auto& s = self->state;
            const auto why = self->system().render(e);
            spdlog::warn("adapter: decision {} not applied: {}", sequence, why);
            s.latest = s.ordered.empty() ? s.in_force : s.ordered.rbegin()->second;
            if (auto* kept = find_record(s, sequence)) {
              kept->effective_step = -1;
              kept->reason += "; not applied: " + why;
            }
          });
}

/// What the monitor sees drifted, for the decision's reason: "link 2->4 bandwidth x0.10,
/// device 3 x2.00", or "nothing drifted" when a drift has ended.
std::string drifted(const runtime::environment_monitor& m) {
  std::string out;
  const auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  for (const auto& l : m.links())
    if (l.drifted)
      add(fmt::format("link {}->{} bandwidth x{:.2f} latency x{:.2f}", l.from, l.to,
                      l.estimated.bandwidth_Bps / l.assumed.bandwidth_Bps,
                      l.estimated.latency_s / l.assumed.latency_s));
  for (const auto& d : m.devices())
    if (d.drifted)
      add(fmt::format("device {} x{:.2f}", d.device, d.slowdown));
  return out.empty() ? "nothing drifted" : out;
}

/// The policy's decision `d` at the end of the latest step: logged, and ordered unless it
/// keeps the plan.
void decided(self_ptr self, const runtime::adapt_decision& d) {
  auto& st = self->state;
  auto r = record_of(d, st.last_step);
  r.reason = drifted(st.adapter->monitor()) + ": " + r.reason;
  if (d.kind == runtime::decision_kind::keep) {
    keep(st, std::move(r));
    return;
  }
  if (!runtime::same_layout(st.job->plan, d.next) || !st.coordinator) {
    r.reason += st.coordinator ? "; not applied: a re-plan moves layers, which a running job "
                                 "does not do yet"
                               : "; not applied: no coordinator";
    keep(st, std::move(r));
    return;
  }
  order(self, d.next, std::move(r));
}

/// Whether the job's times are the emulated cluster's, so that the monitor's estimates
/// compare like with like (links: also shaped wall time; op times: virtual and dry only).
bool emulated_links(const job_context& job) {
  return !job.wall() || job.mode.shape_links;
}

void on_sample(self_ptr self, const link_sample& s) {
  auto& st = self->state;
  auto [it, fresh] = st.links.try_emplace(s.link);
  auto& l = it->second;
  if (fresh) {
    l.link = s.link;
    l.from_device = s.from;
    l.to_device = s.to;
  }
  ++l.transfers;
  l.bytes += s.bytes;
  l.busy_s += s.drained - s.start;
  st.delay_sum[s.link] += s.end - s.send_time;
  l.mean_delay_s = st.delay_sum[s.link] / static_cast<double>(l.transfers);
  l.bandwidth_Bps = l.busy_s > 0 ? l.bytes / l.busy_s : 0.0;
  if (st.samples.size() < st.max_samples)
    st.samples.push_back(s);
  if (!st.adapter || !emulated_links(*st.job))
    return;
  st.last_step = std::max(st.last_step, s.step);
  st.adapter->observe({s.from, s.to, s.bytes, s.start, s.drained, s.end});
}

/// The step ended: each stage's compute (where op times are the cluster's: virtual and dry
/// time), then the policy if a drift began or ended (runtime::step_adapter::end_step).
void on_step(self_ptr self, const step_result& r) {
  auto& st = self->state;
  st.last_step = std::max(st.last_step, r.step);
  if (!st.adapter)
    return;
  // The plan that ran this step.
  if (auto it = st.ordered.upper_bound(r.step); it != st.ordered.begin()) {
    st.in_force = std::prev(it)->second;
    st.ordered.erase(st.ordered.begin(), it);
  }
  std::vector<std::vector<double>> compute;
  if (!st.job->wall()) {
    compute.resize(st.in_force.pipelines.size());
    for (size_t p = 0; p < compute.size(); ++p)
      compute[p].assign(st.in_force.pipelines[p].stages.size(), 0.0);
    for (size_t k = 0; k < r.ops.size() && k < r.op_stage.size(); ++k) {
      const auto [p, s] = st.job->stage_at(static_cast<size_t>(r.op_stage[k]));
      compute.at(static_cast<size_t>(p)).at(static_cast<size_t>(s)) +=
          r.ops[k].end - r.ops[k].start;
    }
  } else if (!emulated_links(*st.job)) {
    return;
  }
  if (auto d = st.adapter->end_step(st.in_force, compute, st.latest, st.options.react))
    decided(self, *d);
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
    st.adapter.emplace(vc.hardware(), vc.model(), vc.profile(), job->plan, st.options.band,
                       st.options.window, st.options.policy);
  }
  st.job = std::move(job);
  return {
      [=](const link_sample& s) { on_sample(self, s); },
      [=](const step_result& r) {
        on_step(self, r);
        return r.step;
      },
      [=](links_atom) {
        std::vector<link_summary> out;
        for (const auto& [id, l] : self->state.links)
          out.push_back(l);
        return out;
      },
      [=](samples_atom) { return self->state.samples; },
      [=](decisions_atom) {
        const auto& d = self->state.decisions;
        return std::vector<adapt_record>(d.begin(), d.end());
      },
      [=](wire_atom, const caf::strong_actor_ptr& coordinator) {
        self->state.coordinator = caf::actor_cast<coordinator_actor>(coordinator);
      },
      // adapt_to: the allocation `r` from step r.effective_step on, as a decision of kind
      // "ordered"; the answer is the step it takes effect at.
      [=](rebalance& r) -> caf::result<int64_t> {
        auto& st = self->state;
        if (!st.coordinator || !st.job)
          return make_error(messages::error_code::internal, "adapter: no job to adapt");
        runtime::plan next;
        try {
          next = st.job->plan_after(r);
        } catch (const std::exception& e) {
          return make_error(messages::error_code::bad_input, std::string("adapt_to: ") + e.what());
        }
        auto promise = self->make_response_promise<int64_t>();
        adapt_record rec;
        rec.step = st.last_step;
        rec.kind = "ordered";
        rec.reason = "adapt_to from step " + std::to_string(r.effective_step);
        st.latest = next;
        self->request(st.coordinator, caf::infinite, std::move(r))
            .then(
                [=](int64_t at) mutable {
                  rec.effective_step = at;
                  self->state.ordered[at] = next;
                  keep(self->state, rec);
                  promise.deliver(at);
                },
                [=](caf::error& e) mutable { promise.deliver(std::move(e)); });
        return promise;
      },
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
