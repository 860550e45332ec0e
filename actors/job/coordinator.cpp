#include "actors/job/coordinator.hpp"
#include "actors/job/coordinator_recovery.hpp"
#include "actors/job/coordinator_replan.hpp"
#include "actors/job/snapshot_keeping.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/wire_format.hpp"
#include <caf/scoped_actor.hpp>

#include "runtime/adapt/node_loss.hpp"
#include "runtime/base/lr_schedule.hpp"
#include "runtime/step/step_totals.hpp"

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

namespace deepcee::actors {

namespace {

using self_ptr = coordinator_self;
using phase = coordinator_phase;

using messages::error_code;

// ---- Failures ------------------------------------------------------------------------------

/// Refuses every injection that waits: the job cannot take them any more.
void refuse_injections(self_ptr self, error_code code, const std::string& why) {
  auto& st = self->state;
  for (auto& i : st.injections)
    i.answer.deliver(make_error(code, why));
  st.injections.clear();
}

/// The step in flight fails with `code` and `why`, and no later step runs: its stages may
/// hold half-reduced gradients, rings and pieces.
void fail_step(self_ptr self, error_code code, const std::string& why) {
  auto& st = self->state;
  refuse_injections(self, code, why);
  if (!in_step(st.phase))
    return;
  st.pending->deliver(make_error(code, why));
  st.pending.reset();
  st.phase = phase::failed;
  st.ended =
      "the job cannot go on after step " + std::to_string(st.result.step) + " failed (" + why + ")";
}

/// Stops the job for good: a node went away, or the job was stopped. The first reason is
/// the one every later request reads.
void stop_job(self_ptr self, const std::string& why) {
  auto& st = self->state;
  const std::string reason = st.phase == phase::stopped ? st.ended : why;
  fail_step(self, error_code::peer_down, reason);
  st.phase = phase::stopped;
  st.ended = reason;
}

/// Why a request that needs a later step is refused: the job has failed or stopped.
std::optional<caf::error> refusal(const coordinator_state& st) {
  if (st.phase == phase::stopped)
    return make_error(error_code::peer_down, st.ended);
  if (st.phase == phase::failed)
    return make_error(error_code::internal, st.ended);
  return std::nullopt;
}

/// Whether step `step` is still at its boundary in phase `at` (it has not failed since).
bool at_boundary(const coordinator_state& st, int64_t step, phase at = phase::starting) {
  return st.phase == at && st.result.step == step;
}

/// The caf::error of a failed request as fail_step takes it.
void fail_step_on(self_ptr self, const caf::error& e) {
  fail_step(self, code_of(e).value_or(error_code::internal), self->system().render(e));
}

// ---- The end of a step ---------------------------------------------------------------------

void deliver_result(self_ptr self) {
  auto& st = self->state;
  if (st.phase != phase::ending)
    return;
  st.pending->deliver(st.result);
  st.pending.reset();
  st.phase = phase::idle;
}

/// The step has ended (every report is in and the optimizer's orders are sent): its
/// result goes to the adapter, then to whoever asked for the step.
void step_ended(self_ptr self) {
  auto& st = self->state;
  st.phase = phase::ending;
  if (st.job->wall()) { // the all-reduce and the reports as they really took
    st.result.end_s = st.job->real_now_s();
    st.result.finish.push_back({.name = "allreduce + reports",
                                .device = -1,
                                .start_s = st.result.compute_end_s,
                                .end_s = st.result.end_s});
  }
  st.clock_s = st.result.end_s;
  if (!st.adapter) {
    deliver_result(self);
    return;
  }
  // The adapter reads the step before it ends, so that a decision the step's transfers led
  // to reaches this actor before the next step can start (it comes before the answer).
  // The answer is how long the active probes the adapter sends at this boundary hold the
  // next step (runtime/adapt/active_probe.hpp): virtual time charges them to its start.
  self->request(st.adapter, caf::infinite, st.result)
      .then(
          [self](double hold_s) { // 0 in wall time, where nothing sends probes
            self->state.probe_hold_s = hold_s;
            deliver_result(self);
          },
          [self](caf::error&) { deliver_result(self); });
}

/// Every stage reported: decide the loss, the norm, the rate and the step's virtual end.
void all_reported(self_ptr self) {
  auto& st = self->state;
  const auto& plan = st.plan;
  auto& r = st.result;
  std::vector<runtime::stage_totals> stages;
  for (size_t k = 0; k < st.reports.size(); ++k) {
    const auto& rep = *st.reports[k];
    stages.push_back({.pipeline = rep.pipeline,
                      .end_s = rep.end_time,
                      .loss_sum = rep.loss_sum,
                      .grad_sum_squares = rep.grad_sum_squares,
                      .dropped = rep.dropped});
    for (const auto& op : rep.ops) {
      r.ops.push_back(op);
      r.op_stage.push_back(static_cast<int32_t>(k));
    }
  }
  const auto totals = runtime::total_of(stages, static_cast<int>(plan.pipelines.size()),
                                        plan.global_batch(), plan.model.context);
  r.loss = totals.loss;
  r.grad_norm = totals.grad_norm;
  r.compute_end_s = totals.compute_end_s;
  r.dropped = totals.dropped + st.dropped;
  r.lr = runtime::learning_rate(st.job->train.optimizer, static_cast<int>(r.step),
                                st.job->train.steps);
  if (!st.job->wall()) {
    std::vector<runtime::trace_event> finish;
    r.end_s = st.cluster->finish_step(totals.pipeline_ends, &finish);
    for (auto& e : finish)
      r.finish.push_back(
          {.name = std::move(e.name), .device = e.track, .start_s = e.start_s, .end_s = e.end_s});
  }
  // One message per stage, answered by nothing. The next step's start follows it on the
  // same way, so each stage's devices step before that step's ops reach them (control
  // messages, runtime/sim/simulator.hpp). A failed optimizer step comes as an error report.
  const optimize_order order{.step = r.step, .learning_rate = r.lr, .grad_norm = r.grad_norm};
  for (auto& stage : st.stages)
    self->send(stage, order);
  order_snapshots(self, r.step); // after the optimizer's order on each stage's way
  step_ended(self);
}

// ---- The start of a step -------------------------------------------------------------------

bool lose_killed_node(self_ptr self);

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
      if (!lose_killed_node(self))
        fail_step(self, error_code::internal, e.what());
      return;
    }
    for (auto& e : begin)
      st.result.finish.push_back(
          {.name = std::move(e.name), .device = e.track, .start_s = e.start_s, .end_s = e.end_s});
  }
  st.phase = phase::running;
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

/// Puts the allocation `order` in force from its step on. Every stage has it (and has
/// built its op list) before any stage starts the step, so that no tensor of the step
/// meets a stage that still counts the old micro-batches.
void rebalance_then_start(self_ptr self, rebalance order) {
  auto& st = self->state;
  st.plan = st.job->plan_after(order);         // checked when it was ordered
  st.cluster = st.cluster->with_plan(st.plan); // under the script in force
  const auto step = order.effective_step;
  fan_out<int64_t>(self, st.stages, caf::infinite, std::move(order))
      .then(
          [self, step](std::vector<int64_t>&) {
            if (at_boundary(self->state, step))
              start_stages(self);
          },
          [self](caf::error& e) { fail_step_on(self, e); });
}

/// Starts the step once its allocation is in force (`order`: a rebalance from this step on).
void allocate_then_start(self_ptr self, std::optional<rebalance> order) {
  if (order)
    rebalance_then_start(self, std::move(*order));
  else
    start_stages(self);
}

/// The events due at this step's start (runtime::take_injected): the job's step events of
/// this step, then those taken off the waiting injections (what came later wins). The
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
/// the step starts, then answers their injectors with the step. After a re-plan
/// (`replanned`) the new stages get the script in force even when nothing is due: those on
/// other nodes were built from the job's own script.
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
    st.result.injected.push_back({.step = step, .script = std::move(due)});
  }
  fan_out<int64_t>(self, st.stages, caf::infinite, script_update{.step = step, .script = st.script})
      .then(
          [self, step, order, answered](std::vector<int64_t>&) mutable {
            for (auto& a : answered)
              a.deliver(step);
            if (at_boundary(self->state, step))
              allocate_then_start(self, std::move(order));
          },
          [self, answered](caf::error& e) mutable {
            for (auto& a : answered)
              a.deliver(e);
            fail_step_on(self, e);
          });
}

/// The boundary of step `step`: a re-plan due by then (the rebalances ordered for the old
/// plan up to the step go with it), else the allocation due, with the events due; then the
/// step starts. A re-plan's failure fails the step.
void begin_boundary(self_ptr self, int64_t step) {
  auto& st = self->state;
  if (auto replan = st.replans.take_due(step)) {
    st.ordered.drop_through(step);
    replan->effective_step = step;
    st.phase = phase::replanning;
    const auto snapshot = replan->from_snapshot; // a loss between steps rolls back here
    const double since_s = st.result.start_s;
    replan_then(
        self, std::move(*replan),
        [self, step, snapshot, since_s] {
          if (!at_boundary(self->state, step, phase::replanning))
            return; // the step failed while the re-plan ran
          if (snapshot >= 0) {
            replay_from_snapshot(self, step, snapshot, since_s);
            return;
          }
          self->state.phase = phase::starting;
          inject_then_start(self, std::nullopt, true);
        },
        [self](error_code code, const std::string& why) { fail_step(self, code, why); });
    return;
  }
  st.phase = phase::starting;
  auto order = st.ordered.take_due(step);
  if (order)
    order->effective_step = step;
  inject_then_start(self, std::move(order));
}

// ---- Lost nodes ----------------------------------------------------------------------------

/// The step in flight starts again, on the survivors' plan a recovery put in force: the
/// same step, so the same samples.
void restart_step(self_ptr self, int64_t step, double lost_at_s, const std::string& node) {
  auto& st = self->state;
  if (st.phase != phase::recovering || st.result.step != step)
    return;
  st.result.finish.push_back(
      {.name = "recovery: node " + node + " lost, step " + std::to_string(step) + " starts again",
       .device = -1,
       .start_s = lost_at_s,
       .end_s = st.clock_s});
  st.phase = phase::starting;
  inject_then_start(self, std::nullopt, true);
}

/// Drops the step in flight (its stages stop where they are; the optimizer has not run)
/// and puts `order`, the survivors' plan, in force for the same step. Virtual and dry time
/// charge the loss from `lost_at_s` (not before the step began), the liveness bound in
/// which a real run notices it, and the move.
void recover_step(self_ptr self, replan_order order, double lost_at_s, const std::string& node) {
  auto& st = self->state;
  const auto step = st.result.step;
  for (auto& s : st.stages)
    self->send(s, lost_atom_v, step);
  st.phase = phase::recovering;
  if (!st.job->wall())
    st.clock_s = runtime::loss_noticed_s(lost_at_s, st.result.start_s, st.job->mode.liveness_s);
  lost_at_s = std::max(lost_at_s, st.result.start_s);
  order.effective_step = step;
  const auto snapshot = order.from_snapshot;
  replan_then(
      self, std::move(order),
      [self, step, lost_at_s, node, snapshot] {
        if (snapshot < 0) {
          restart_step(self, step, lost_at_s, node);
        } else if (self->state.phase == phase::recovering) {
          replay_from_snapshot(self, step, snapshot, lost_at_s);
        }
      },
      [self](error_code code, const std::string& why) { fail_step(self, code, why); });
}

/// Node `node` is lost (`why`), at `lost_at_s` on the job's clock: the job goes on without
/// it where it can (coordinator_recovery.hpp), else it stops saying why.
void on_lost(self_ptr self, const std::string& node, const std::string& why, double lost_at_s) {
  auto& st = self->state;
  if (st.phase == phase::failed || st.phase == phase::stopped)
    return;
  auto r = plan_recovery(st, node, why);
  switch (r.what) {
  case recovery_plan::kind::ignore:
    return;
  case recovery_plan::kind::stop:
    stop_job(self, r.line);
    return;
  case recovery_plan::kind::no_change:
    spdlog::warn("{}", r.line);
    return;
  case recovery_plan::kind::go_on:
    break;
  }
  spdlog::warn("{}", r.line);
  st.ordered.clear(); // orders for the old plan
  st.replans.clear();
  if (st.phase == phase::running || st.phase == phase::starting) {
    recover_step(self, std::move(r.order), lost_at_s, node);
    return;
  }
  // Between steps, or the step's optimizer orders are out: the next step runs the new plan.
  r.order.effective_step = st.next_step;
  st.replans.put(st.next_step, std::move(r.order));
}

/// A spare joined the running job (the node registry): from the next step the job runs the
/// planner's plan for the nodes now there, where that repays its move and the job adapts.
void on_spare(self_ptr self, int32_t node, caf::strong_actor_ptr replanner, std::string boot_id) {
  auto& st = self->state;
  if (st.phase == phase::failed || st.phase == phase::stopped)
    return;
  auto r = plan_for_spare(st, node, std::move(replanner), std::move(boot_id));
  spdlog::info("{}", r.line);
  if (r.what != recovery_plan::kind::go_on)
    return;
  r.order.effective_step = st.next_step;
  st.replans.put(st.next_step, std::move(r.order));
}

/// A step failed, or could not start, because the script killed a node the plan uses (the
/// emulated cluster's kill, in any time mode). Recovers from the first such kill; false
/// when there is none.
bool lose_killed_node(self_ptr self) {
  auto& st = self->state;
  const auto& c = st.cluster->hardware();
  const auto kill = runtime::first_kill(st.script, c, st.plan, st.lost_nodes);
  if (!kill)
    return false;
  on_lost(self, c.nodes.at(static_cast<size_t>(kill->node)).name,
          runtime::killed_by_script(kill->at_s), kill->at_s);
  return true;
}

// ---- Handlers ------------------------------------------------------------------------------

caf::result<double> on_restore(self_ptr self, double clock_s) {
  auto& st = self->state;
  if (in_step(st.phase))
    return make_error(error_code::internal, "clock restored while a step runs");
  if (!st.job->wall())
    st.clock_s = clock_s;
  return st.clock_s;
}

caf::result<step_result> on_step(self_ptr self, int64_t step) {
  auto& st = self->state;
  if (in_step(st.phase))
    return make_error(error_code::internal,
                      "step " + std::to_string(step) + " asked while one runs");
  if (auto why = refusal(st))
    return std::move(*why);
  st.result = step_result{};
  st.result.step = step;
  // The step starts at its boundary: what happens there before its ops (a re-plan's
  // move, an allocation or injection put in force) is part of its time, as in
  // runtime::simulate_adaptive.
  st.result.start_s = st.job->wall() ? st.job->real_now_s() : st.clock_s;
  st.clock_s += std::exchange(st.probe_hold_s, 0.0); // the probes go first
  st.reports.assign(st.stages.size(), std::nullopt);
  st.next_step = step + 1;
  // Pending before anything starts, so that a re-plan that fails at once fails this step.
  auto promise = self->make_response_promise<step_result>();
  st.pending = promise;
  begin_boundary(self, step);
  if (st.step_timeout.count() > 0)
    self->delayed_send(self, st.step_timeout, timeout_atom_v, step);
  return promise;
}

/// An order for a later step (a rebalance or a re-plan): refused while the job cannot take
/// one, checked by `check` (which throws on a bad order), then kept in `orders` for the
/// first step boundary not yet passed. The answer is the step it takes effect from.
template <class Order, class Check>
caf::result<int64_t> accept_order(coordinator_state& st, Order& r,
                                  runtime::step_ordered<Order>& orders, const char* what,
                                  Check&& check) {
  if (auto why = refusal(st))
    return std::move(*why);
  try {
    check(r);
  } catch (const std::exception& e) {
    return make_error(error_code::bad_input, std::string(what) + ": " + e.what());
  }
  r.effective_step = std::max(r.effective_step, st.next_step);
  const auto at = r.effective_step;
  orders.put(at, std::move(r));
  return at;
}

caf::result<int64_t> on_rebalance(self_ptr self, rebalance& r) {
  auto& st = self->state;
  return accept_order(st, r, st.ordered, "rebalance",
                      [&](const rebalance& x) { (void)st.job->plan_after(x); });
}

caf::result<int64_t> on_replan(self_ptr self, replan_order& r) {
  auto& st = self->state;
  return accept_order(st, r, st.replans, "re-plan",
                      [&](const replan_order& x) { check_replan(*st.job, x.plan, st.replanners); });
}

/// An injection (`deepcee inject`): checked against the cluster, then kept for the next
/// step boundary. The answer is the step from which its events are in force.
caf::result<int64_t> on_injection(self_ptr self, script_update& u) {
  auto& st = self->state;
  if (auto why = refusal(st))
    return std::move(*why);
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
  st.injections.push_back({.events = std::move(u.script), .answer = answer});
  return answer;
}

job_in_force on_plan(self_ptr self) {
  auto& st = self->state;
  job_in_force out{.job = st.job, .stages = {}, .plan = st.plan};
  for (const auto& s : st.stages)
    out.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
  return out;
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

void on_timeout(self_ptr self, int64_t step) {
  auto& st = self->state;
  if (!in_step(st.phase) || st.result.step != step)
    return; // that step has ended
  fail_step(self, error_code::timeout,
            missing_stages(st) + " within " +
                fmt::format("{:.1f}", st.step_timeout.count() / 1000.0) + " s");
}

/// A stage's error: the step in flight fails, or, between steps (a failed optimizer step),
/// the job cannot go on.
void on_error_report(self_ptr self, const stage_report& rep) {
  auto& st = self->state;
  if (st.phase == phase::recovering)
    return; // a stage of the dropped step, failing for want of the lost node
  if (in_step(st.phase) && lose_killed_node(self))
    return;
  if (st.phase == phase::idle) {
    st.phase = phase::failed;
    st.ended = "the job cannot go on after step " + std::to_string(st.result.step) + " (" +
               rep.error + ")";
  }
  fail_step(self, rep.code, rep.error);
}

void on_report(self_ptr self, stage_report& rep) {
  auto& st = self->state;
  if (!rep.error.empty()) {
    on_error_report(self, rep);
    return;
  }
  if (st.phase != phase::running || rep.step != st.result.step)
    return; // a late report of a failed step
  const auto& sender = self->current_sender();
  if (sender && std::none_of(st.stages.begin(), st.stages.end(), [&](const stage_actor& s) {
        return s->address() == sender->address();
      }))
    return; // a stage of a plan a recovery replaced
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
  if (!std::all_of(st.reports.begin(), st.reports.end(), [](const auto& x) { return x; }))
    return;
  try {
    all_reported(self);
  } catch (const std::exception& e) {
    fail_step(self, error_code::internal, e.what());
  }
}

/// A watched actor went away: its node disconnected or died.
void on_down(self_ptr self, const caf::down_msg& down) {
  auto& st = self->state;
  for (const auto& [actor, node] : st.watched)
    if (actor->address() == down.source) {
      const std::string name = node; // on_lost may watch others
      on_lost(self, name, "disconnected: " + self->system().render(down.reason),
              st.job->real_now_s());
      return;
    }
}

coordinator_actor::behavior_type coordinator_behavior(
    self_ptr self, std::shared_ptr<job_context> job, std::vector<stage_actor> stages,
    std::vector<std::string> stage_nodes, std::chrono::milliseconds step_timeout,
    std::vector<caf::strong_actor_ptr> devices, std::vector<caf::strong_actor_ptr> replanners,
    std::vector<std::string> boot_ids, caf::strong_actor_ptr heartbeat) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.step_timeout = step_timeout;
  st.job = std::move(job);
  st.plan = st.job->plan;
  st.cluster = st.job->cluster;
  st.script = st.cluster->timeline();
  st.scripted = runtime::split_step_events(st.job->script).pending;
  st.stages = std::move(stages);
  st.devices_apart = std::move(devices);
  st.replanners = std::move(replanners);
  st.boot_ids = std::move(boot_ids);
  st.heartbeat = caf::actor_cast<heartbeat_actor>(heartbeat);
  plan_job_snapshots(st);
  self->set_down_handler([self](caf::down_msg& down) { on_down(self, down); });
  watch_remote_actors(self, stage_nodes);
  return {
      [self](restore_atom, double clock_s) { return on_restore(self, clock_s); },
      [self](step_atom, int64_t step) { return on_step(self, step); },
      [self](rebalance& r) { return on_rebalance(self, r); },
      [self](script_update& u) { return on_injection(self, u); },
      [self](replan_order& r) { return on_replan(self, r); },
      [self](plan_atom) { return on_plan(self); },
      [self](wire_atom, const caf::strong_actor_ptr& adapter) {
        self->state.adapter = caf::actor_cast<adapter_actor>(adapter);
      },
      [self](timeout_atom, int64_t step) { on_timeout(self, step); },
      [self](stop_atom, const std::string& why) { stop_job(self, why); },
      [self](peer_atom, int32_t node, caf::strong_actor_ptr& replanner, std::string& boot_id) {
        on_spare(self, node, std::move(replanner), std::move(boot_id));
      },
      [self](lost_atom, const std::string& node, const std::string& why) {
        on_lost(self, node, why, self->state.job->real_now_s());
      },
      [self](stage_report& rep) { on_report(self, rep); },
      [self](kept_atom, int64_t step, int32_t pipeline, int32_t stage) {
        on_kept(self, step, pipeline, stage);
      },
  };
}

} // namespace

void watch_remote_actors(coordinator_self self, const std::vector<std::string>& stage_nodes) {
  auto& st = self->state;
  for (const auto& [actor, node] : st.watched)
    self->demonitor(caf::actor_cast<caf::actor_addr>(actor));
  st.watched.clear();
  if (!stage_nodes.empty())
    for (size_t k = 0; k < st.stages.size(); ++k)
      st.watched.emplace_back(caf::actor_cast<caf::strong_actor_ptr>(st.stages[k]),
                              stage_nodes.at(k));
  for (size_t slot = 0; slot < st.devices_apart.size(); ++slot)
    if (st.devices_apart[slot])
      st.watched.emplace_back(st.devices_apart[slot],
                              st.job->slot_node_name(static_cast<int>(slot)));
  for (const auto& w : st.watched)
    self->monitor(w.first);
}

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
                                    const std::vector<std::string>& boot_ids,
                                    caf::strong_actor_ptr heartbeat) {
  return sys.spawn(coordinator_behavior, std::move(job), std::move(stages), std::move(stage_nodes),
                   step_timeout, devices_apart, replanners, boot_ids, std::move(heartbeat));
}

} // namespace deepcee::actors
