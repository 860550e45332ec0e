#include "actors/job/coordinator.hpp"
#include "actors/job/coordinator_replan.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include <caf/scoped_actor.hpp>

#include "runtime/base/lr_schedule.hpp"

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

namespace deepcee::actors {

namespace {

using self_ptr = coordinator_actor::stateful_pointer<coordinator_state>;

using messages::error_code;

/// Refuses every injection that waits: the job cannot take them any more.
void refuse_injections(self_ptr self, error_code code, const std::string& why) {
  auto& st = self->state;
  for (auto& i : st.injections)
    i.answer.deliver(make_error(code, why));
  st.injections.clear();
}

void fail_step(self_ptr self, error_code code, const std::string& why) {
  auto& st = self->state;
  refuse_injections(self, code, why);
  if (st.pending) {
    st.pending->deliver(make_error(code, why));
    if (st.failed.empty()) // its stages may hold half-reduced gradients, rings, pieces
      st.failed = "the job cannot go on after step " + std::to_string(st.result.step) +
                  " failed (" + why + ")";
  }
  st.pending.reset();
}

void deliver_result(self_ptr self) {
  auto& st = self->state;
  if (!st.pending)
    return;
  st.pending->deliver(st.result);
  st.pending.reset();
}

/// The step has ended (every report is in and the optimizer's orders are sent): its
/// result goes to the adapter, then to whoever asked for the step.
void step_ended(self_ptr self) {
  auto& st = self->state;
  if (st.job->wall()) { // the all-reduce and the reports as they really took
    st.result.end_s = st.job->real_now_s();
    st.result.finish.push_back(
        {"allreduce + reports", -1, st.result.compute_end_s, st.result.end_s});
  }
  st.clock_s = st.result.end_s;
  if (!st.adapter) {
    deliver_result(self);
    return;
  }
  // The adapter reads the step before it ends: a decision that the step's transfers led to
  // reaches this actor (before the adapter's answer) before the next step can start.
  // Its answer is how long the active probes it sends at this boundary hold the next step
  // (runtime/adapt/active_probe.hpp): virtual time charges them to that step's start.
  self->request(st.adapter, caf::infinite, st.result)
      .then(
          [=](double hold_s) { // 0 in wall time, where nothing sends probes
            self->state.probe_hold_s = hold_s;
            deliver_result(self);
          },
          [=](caf::error&) { deliver_result(self); });
}

/// Every stage reported: decide the norm, the rate and the step's virtual end.
void all_reported(self_ptr self) {
  auto& st = self->state;
  const auto& plan = st.plan;
  auto& r = st.result;
  double loss = 0, squares = 0;
  std::vector<std::vector<double>> ends(plan.pipelines.size());
  for (size_t k = 0; k < st.reports.size(); ++k) {
    auto& rep = *st.reports[k];
    loss += rep.loss_sum;
    squares += rep.grad_sum_squares;
    ends[static_cast<size_t>(rep.pipeline)].push_back(rep.end_time);
    r.compute_end_s = std::max(r.compute_end_s, rep.end_time);
    r.dropped += rep.dropped;
    for (const auto& op : rep.ops) {
      r.ops.push_back(op);
      r.op_stage.push_back(static_cast<int32_t>(k));
    }
  }
  r.dropped += st.dropped;
  r.loss = loss / (static_cast<double>(plan.global_batch()) * plan.model.context);
  r.grad_norm = std::sqrt(squares);
  r.lr = runtime::learning_rate(st.job->train.optimizer, static_cast<int>(r.step),
                                st.job->train.steps);
  if (!st.job->wall()) {
    std::vector<runtime::trace_event> finish;
    r.end_s = st.cluster->finish_step(ends, &finish);
    for (auto& e : finish)
      r.finish.push_back({std::move(e.name), e.track, e.start_s, e.end_s});
  }
  // One message per stage, answered by nothing: the next step's start follows it on the
  // same way, and each stage's devices step before that step's ops reach them (control
  // messages, runtime/sim/simulator.hpp). A failed optimizer step comes as an error report.
  const optimize_order order{r.step, r.lr, r.grad_norm};
  for (auto& stage : st.stages)
    self->send(stage, order);
  step_ended(self);
}

/// Sends the step's start to every stage, with the micro-batch counts in force.
void start_stages(self_ptr self) {
  auto& st = self->state;
  if (st.job->wall())
    st.clock_s = st.job->real_now_s();
  step_start order;
  order.step = st.result.step;
  order.start_time = st.clock_s;
  for (const auto& p : st.plan.pipelines)
    order.micro_batches.push_back(p.micro_batches);
  if (!st.job->wall()) { // the optimizer steps that begin it, as the simulator traces them
    std::vector<runtime::trace_event> begin;
    try {
      st.cluster->begin_step(st.clock_s, begin);
    } catch (const std::exception& e) { // a node the plan uses was killed (job_stopped)
      fail_step(self, error_code::internal, e.what());
      return;
    }
    for (auto& e : begin)
      st.result.finish.push_back({std::move(e.name), e.track, e.start_s, e.end_s});
  }
  // Shaped wall time: each start crosses the emulated link from this node to its stage's.
  size_t k = 0; // flat order: pipeline by pipeline
  for (int p = 0; p < static_cast<int>(st.plan.pipelines.size()); ++p)
    for (int s = 0; s < static_cast<int>(st.plan.pipelines[static_cast<size_t>(p)].stages.size());
         ++s) {
      auto& stage = st.stages.at(k++);
      const double wait =
          st.job->shaping() ? st.cluster->stage(p, s).control_latency(st.clock_s) : 0;
      if (wait > 0)
        self->delayed_send(stage, wait_of(wait), order);
      else
        self->send(stage, order);
    }
}

/// Puts the allocation `order` in force from its step on: every stage has it (and has
/// built its op list) before any stage starts the step, so no tensor of the step meets a
/// stage that still counts the old micro-batches.
void rebalance_then_start(self_ptr self, rebalance order) {
  auto& st = self->state;
  st.plan = st.job->plan_after(order);         // checked when it was ordered
  st.cluster = st.cluster->with_plan(st.plan); // under the script in force
  const auto step = order.effective_step;
  auto acks = std::make_shared<size_t>(0);
  for (auto& stage : st.stages)
    self->request(stage, caf::infinite, order)
        .then(
            [=](int64_t) {
              auto& s = self->state;
              if (++*acks == s.stages.size() && s.pending && s.result.step == step)
                start_stages(self);
            },
            [=](caf::error& e) {
              fail_step(self, code_of(e).value_or(error_code::internal), self->system().render(e));
            });
}

/// Starts the step once its allocation is in force (`order`: a rebalance from this step on).
void allocate_then_start(self_ptr self, std::optional<rebalance> order) {
  if (order)
    rebalance_then_start(self, std::move(*order));
  else
    start_stages(self);
}

/// The events due at this step's start (runtime::take_injected): the job's step events of
/// this step, then those taken off the waiting injections (what came later wins); the
/// injections left with none are `answered` once the events are in force.
runtime::link_timeline take_due(coordinator_state& st, double start_s,
                                std::vector<caf::typed_response_promise<int64_t>>& answered) {
  const int next = static_cast<int>(st.result.step - 1); // take_injected counts from 0
  auto scripted = runtime::take_injected(st.scripted, next, start_s);
  runtime::link_timeline due = std::move(scripted.due);
  st.scripted = std::move(scripted.pending);
  for (auto it = st.injections.begin(); it != st.injections.end();) {
    auto split = runtime::take_injected(it->events, next, start_s);
    due = runtime::merged(due, split.due);
    it->events = std::move(split.pending);
    if (it->events.empty()) {
      answered.push_back(std::move(it->answer));
      it = st.injections.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

/// Puts the events due now in force on every stage (each passes them to its pipes) before
/// the step starts, then answers their injectors with the step. After a re-plan (`replanned`)
/// the new stages get the script in force even when nothing is due: those on other nodes
/// were built from the job's own script.
void inject_then_start(self_ptr self, std::optional<rebalance> order, bool replanned = false) {
  auto& st = self->state;
  std::vector<caf::typed_response_promise<int64_t>> answered;
  const double start_s = st.job->wall() ? st.job->real_now_s() : st.clock_s;
  auto due = take_due(st, start_s, answered);
  if (due.empty() && !(replanned && !st.script.empty())) {
    allocate_then_start(self, std::move(order));
    return;
  }
  const auto step = st.result.step;
  if (!due.empty()) {
    st.script = runtime::merged(st.script, due);
    st.cluster = st.cluster->with_plan(st.plan, st.script);
    st.result.injected.push_back({step, std::move(due)});
  }
  const script_update update{step, st.script};
  auto acks = std::make_shared<size_t>(0);
  auto waiting =
      std::make_shared<std::vector<caf::typed_response_promise<int64_t>>>(std::move(answered));
  for (auto& stage : st.stages)
    self->request(stage, caf::infinite, update)
        .then(
            [=](int64_t) {
              auto& s = self->state;
              if (++*acks != s.stages.size())
                return;
              for (auto& a : *waiting)
                a.deliver(step);
              waiting->clear();
              if (s.pending && s.result.step == step)
                allocate_then_start(self, order);
            },
            [=](caf::error& e) {
              for (auto& a : *waiting)
                a.deliver(e);
              waiting->clear();
              fail_step(self, code_of(e).value_or(error_code::internal), self->system().render(e));
            });
}

/// An injection (`deepcee inject`): checked against the cluster, then kept for the next
/// step boundary. The answer is the step from which its events are in force.
caf::result<int64_t> on_injection(self_ptr self, script_update& u) {
  auto& st = self->state;
  if (!st.lost.empty())
    return make_error(error_code::peer_down, st.lost);
  if (!st.failed.empty())
    return make_error(error_code::internal, st.failed);
  if (u.script.empty())
    return make_error(error_code::bad_input, "the injection holds no event");
  try {
    runtime::check_fits(u.script, st.job->cluster->hardware());
  } catch (const std::exception& e) {
    return make_error(error_code::bad_input, e.what());
  }
  if (st.next_step > st.job->train.steps) // the next boundary is step next_step's start
    return make_error(error_code::internal, "the job has started its last step (" +
                                                std::to_string(st.job->train.steps) +
                                                "): no step boundary is left");
  auto answer = self->make_response_promise<int64_t>();
  st.injections.push_back({std::move(u.script), answer});
  return answer;
}

void peer_lost(self_ptr self, const caf::down_msg& down) {
  auto& st = self->state;
  for (const auto& [actor, node] : st.watched) {
    if (actor->address() != down.source)
      continue;
    if (st.lost.empty())
      st.lost = "node " + node + " disconnected (" + self->system().render(down.reason) + ")";
    fail_step(self, error_code::peer_down, st.lost);
    return;
  }
}

/// The stages a timed-out step still waits for, as "pipeline p stage s (node n)".
std::string missing_stages(const coordinator_state& st) {
  std::string out;
  const bool reported = std::all_of(st.reports.begin(), st.reports.end(),
                                    [](const auto& x) { return x.has_value(); });
  for (size_t k = 0; k < st.stages.size(); ++k) {
    if (!reported && st.reports[k].has_value())
      continue;
    out += (out.empty() ? "" : ", ") + st.job->stage_name(k); // names the node, if several
  }
  return (reported ? "no optimizer acknowledgement among " : "no report from ") + out;
}

coordinator_actor::behavior_type coordinator_behavior(
    self_ptr self, std::shared_ptr<job_context> job, std::vector<stage_actor> stages,
    std::vector<std::string> stage_nodes, std::chrono::milliseconds step_timeout,
    std::vector<caf::strong_actor_ptr> devices, std::vector<caf::strong_actor_ptr> replanners,
    std::vector<std::string> boot_ids) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.step_timeout = step_timeout;
  st.job = std::move(job);
  st.plan = st.job->plan;
  st.cluster = st.job->cluster;
  st.script = st.cluster->timeline();
  st.scripted = runtime::split_step_events(st.job->script).pending;
  st.stages = std::move(stages);
  if (!stage_nodes.empty())
    for (size_t k = 0; k < st.stages.size(); ++k)
      st.watched.emplace_back(caf::actor_cast<caf::strong_actor_ptr>(st.stages[k]),
                              stage_nodes.at(k));
  for (size_t slot = 0; slot < devices.size(); ++slot)
    if (devices[slot])
      st.watched.emplace_back(devices[slot], st.job->slot_node_name(static_cast<int>(slot)));
  st.devices_apart = std::move(devices);
  st.replanners = std::move(replanners);
  st.boot_ids = std::move(boot_ids);
  self->set_down_handler([=](caf::down_msg& down) { peer_lost(self, down); });
  for (const auto& w : st.watched)
    self->monitor(w.first);
  return {
      [=](restore_atom, double clock_s) -> caf::result<double> {
        auto& st = self->state;
        if (st.pending)
          return make_error(error_code::internal, "clock restored while a step runs");
        if (!st.job->wall())
          st.clock_s = clock_s;
        return st.clock_s;
      },
      [=](step_atom, int64_t step) -> caf::result<step_result> {
        auto& st = self->state;
        if (st.pending)
          return make_error(error_code::internal,
                            "step " + std::to_string(step) + " asked while one runs");
        if (!st.lost.empty())
          return make_error(error_code::peer_down, st.lost);
        if (!st.failed.empty())
          return make_error(error_code::internal, st.failed);
        st.result = step_result{};
        st.result.step = step;
        // The step starts at its boundary: what happens there before its ops (a re-plan's
        // move, an allocation or injection put in force) is part of its time, as in
        // runtime::simulate_adaptive.
        st.result.start_s = st.job->wall() ? st.job->real_now_s() : st.clock_s;
        st.clock_s += std::exchange(st.probe_hold_s, 0.0); // the probes go first
        st.reports.assign(st.stages.size(), std::nullopt);
        st.next_step = step + 1;
        // Pending before anything starts: a re-plan that fails at once fails this step.
        auto promise = self->make_response_promise<step_result>();
        st.pending = promise;
        if (auto it = st.replans.upper_bound(step); it != st.replans.begin()) {
          auto order = std::prev(it)->second;
          st.replans.erase(st.replans.begin(), it);
          // Rebalances ordered for the old plan up to this step are replaced by the new plan.
          st.ordered.erase(st.ordered.begin(), st.ordered.upper_bound(step));
          order.effective_step = step;
          replan_then(
              self, std::move(order), [=] { inject_then_start(self, std::nullopt, true); },
              [=](error_code code, const std::string& why) { fail_step(self, code, why); });
        } else {
          std::optional<rebalance> order;
          if (auto it = st.ordered.upper_bound(step); it != st.ordered.begin()) {
            order = std::prev(it)->second;
            st.ordered.erase(st.ordered.begin(), it);
            order->effective_step = step;
          }
          inject_then_start(self, std::move(order));
        }
        if (st.step_timeout.count() > 0)
          self->delayed_send(self, st.step_timeout, timeout_atom_v, step);
        return promise;
      },
      [=](rebalance& r) -> caf::result<int64_t> {
        auto& st = self->state;
        try {
          (void)st.job->plan_after(r);
        } catch (const std::exception& e) {
          return make_error(error_code::bad_input, std::string("rebalance: ") + e.what());
        }
        r.effective_step = std::max(r.effective_step, st.next_step);
        const auto at = r.effective_step;
        st.ordered[at] = std::move(r);
        return at;
      },
      [=](script_update& u) -> caf::result<int64_t> { return on_injection(self, u); },
      [=](replan_order& r) -> caf::result<int64_t> {
        auto& st = self->state;
        try {
          check_replan(*st.job, r.plan, st.replanners);
        } catch (const std::exception& e) {
          return make_error(error_code::bad_input, std::string("re-plan: ") + e.what());
        }
        r.effective_step = std::max(r.effective_step, st.next_step);
        const auto at = r.effective_step;
        st.replans[at] = std::move(r);
        return at;
      },
      [=](plan_atom) {
        auto& st = self->state;
        job_in_force out{st.job, {}};
        for (const auto& s : st.stages)
          out.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
        return out;
      },
      [=](wire_atom, const caf::strong_actor_ptr& adapter) {
        self->state.adapter = caf::actor_cast<adapter_actor>(adapter);
      },
      [=](timeout_atom, int64_t step) {
        auto& st = self->state;
        if (!st.pending || st.result.step != step)
          return; // that step has ended
        fail_step(self, error_code::timeout,
                  missing_stages(st) + " within " +
                      fmt::format("{:.1f}", st.step_timeout.count() / 1000.0) + " s");
      },
      [=](stop_atom, const std::string& why) {
        auto& st = self->state;
        if (st.lost.empty())
          st.lost = why;
        fail_step(self, error_code::peer_down, st.lost);
      },
      [=](stage_report& rep) {
        auto& st = self->state;
        if (!rep.error.empty()) {
          if (!st.pending && st.failed.empty()) // an optimizer step between two steps
            st.failed = "the job cannot go on after step " + std::to_string(st.result.step) + " (" +
                        rep.error + ")";
          fail_step(self, rep.code, rep.error);
          return;
        }
        if (!st.pending || rep.step != st.result.step)
          return; // a late report of a failed step
        const int pipelines = static_cast<int>(st.job->plan.pipelines.size());
        if (rep.pipeline >= pipelines || rep.stage >= st.job->stage_count(rep.pipeline)) {
          ++st.dropped;
          spdlog::warn("coordinator: dropped a report of pipeline {} stage {}, which the plan "
                       "does not have; {} so far",
                       rep.pipeline, rep.stage, st.dropped);
          return;
        }
        const int k = st.job->flat_index(rep.pipeline, rep.stage);
        st.reports[static_cast<size_t>(k)] = std::move(rep);
        if (std::all_of(st.reports.begin(), st.reports.end(), [](const auto& x) { return x; })) {
          try {
            all_reported(self);
          } catch (const std::exception& e) {
            fail_step(self, error_code::internal, e.what());
          }
        }
      },
  };
}

} // namespace

void restore_clock(caf::actor_system& sys, const coordinator_actor& coordinator, double clock_s,
                   std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  std::string error;
  self->request(coordinator, timeout, restore_atom_v, clock_s)
      .receive([](double) {}, [&](caf::error& e) { error = sys.render(e); });
  if (!error.empty())
    throw std::runtime_error("restoring the virtual clock: " + error);
}

coordinator_actor spawn_coordinator(caf::actor_system& sys, std::shared_ptr<job_context> job,
                                    std::vector<stage_actor> stages,
                                    std::vector<std::string> stage_nodes,
                                    std::chrono::milliseconds step_timeout,
                                    const std::vector<caf::strong_actor_ptr>& devices_apart,
                                    const std::vector<caf::strong_actor_ptr>& replanners,
                                    const std::vector<std::string>& boot_ids) {
  return sys.spawn(coordinator_behavior, std::move(job), std::move(stages), std::move(stage_nodes),
                   step_timeout, devices_apart, replanners, boot_ids);
}

} // namespace deepcee::actors
