#include "actors/stage/stage_actor.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"

#include "actors/device/device_worker.hpp"
#include "actors/device/group_actor.hpp"
#include "actors/stage/stage_checkpoint.hpp"
#include "actors/stage/stage_reduce.hpp"
#include "actors/stage/stage_snapshots.hpp"
#include "actors/stage/stage_tensors.hpp"
#include "kernels/train/stage_worker.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/loss_scale.hpp"
#include "runtime/plan/plan_allocation.hpp"

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

/// A stage actor runs its part of every step. The order of events of one step:
/// 1. idle -> computing: the coordinator's step order (kept until the wiring if it comes
///    first) starts the op list; the first and last stages sample the step's batch.
/// 2. computing: the list's next op starts once op_readiness says its input is there (a
///    neighbour's tensor arrives as a tensor message; through a shared pipe, also settled
///    by the pipe's arrival). The group's devices compute it while the stage goes on
///    handling messages; when the group answers, the op ends, its tensor leaves for the
///    neighbour when the readiness rules say (a fused B's gradient after its W), and the
///    next op is tried. In virtual and dry time every step also promises lower bounds on
///    its next send times to pipes and neighbours.
/// 3. computing -> reducing: the list is done; the group all-reduces its devices'
///    gradients, then the stage exchanges gradient shares with the other pipelines' holders
///    of its layers (with one pipeline it asks only for the squares of the sum).
/// 4. reducing -> idle: the stage reports the step (ops, loss, squares) to the coordinator.
/// 5. idle: the coordinator's optimize order reaches the group, which steps every device.
/// A failure anywhere reports the error to the coordinator and returns the stage to idle.
namespace deepcee::actors {

namespace {

using self_ptr = stage_self;
using runtime::op_input;
using runtime::op_kind;
using runtime::tensor_flow;

/// The device actors of the stage's devices on other nodes, by place in the stage (empty
/// where its group spawns its own), from the wiring; empty when it has none.
std::vector<caf::strong_actor_ptr> devices_apart(const job_context& job, int pipeline, int stage,
                                                 const stage_wiring& w) {
  if (job.layout.empty()) // one process runs every device
    return {};
  const auto n = job.plan.pipelines.at(static_cast<size_t>(pipeline))
                     .stages.at(static_cast<size_t>(stage))
                     .devices.size();
  const auto first = static_cast<size_t>(job.layout.slot(job.flat_index(pipeline, stage), 0));
  if (first + n > w.devices.size())
    return {};
  std::vector<caf::strong_actor_ptr> handed(w.devices.begin() + static_cast<ptrdiff_t>(first),
                                            w.devices.begin() + static_cast<ptrdiff_t>(first + n));
  return std::any_of(handed.begin(), handed.end(), [](const auto& d) { return d != nullptr; })
             ? handed
             : std::vector<caf::strong_actor_ptr>{};
}

void advance(self_ptr self);

/// The list's next op has ended at `end` (virtual and dry time; wall time measures it
/// now): its tensor leaves when op_readiness says (a fused B's waits for its W), and the
/// stage moves to the next op.
void complete_op(self_ptr self, double start, double end, double loss,
                 std::optional<outgoing_tensor> out) {
  auto& st = self->state;
  const auto op = st.list.next();
  if (st.job->wall())
    end = st.job->real_now_s();
  const auto flow = st.list.complete_next(end);
  if (op.kind == op_kind::forward && st.place.last)
    st.loss_sum += loss;
  if (out && flow == tensor_flow::none)
    st.pending_grad_out.emplace(op.micro, std::move(*out));
  else if (out)
    send_tensor(self, *out, end);
  else if (auto it = st.pending_grad_out.find(op.micro);
           flow != tensor_flow::none && it != st.pending_grad_out.end()) {
    send_tensor(self, it->second, end);
    st.pending_grad_out.erase(it);
  }
  if (op.kind == op_kind::forward)
    st.activations[st.step].erase(op.micro);
  else if (op.kind == op_kind::backward_input)
    st.gradients[st.step].erase(op.micro);
  st.records.push_back(
      {.kind = static_cast<int32_t>(op.kind), .micro_batch = op.micro, .start = start, .end = end});
  st.free_at = end;
}

/// The neighbour's tensor that `op` reads, once it is there and its arrival is settled
/// (pipes); its arrival then counts in the readiness. None for ops without such an input.
std::shared_ptr<received_tensor> settled_input(stage_state& st, const runtime::schedule_op& op) {
  const auto input = runtime::input_of(op.kind, st.place);
  if (input != op_input::activation && input != op_input::gradient)
    return nullptr;
  const auto role = input == op_input::activation ? tensor_role::activation : tensor_role::gradient;
  auto& by_micro = (role == tensor_role::activation ? st.activations : st.gradients)[st.step];
  auto it = by_micro.find(op.micro);
  if (it == by_micro.end() || !st.sync.settle(role, st.step, op.micro, it->second->arrival_s))
    return nullptr;
  st.list.readiness().input_arrived(input, op.micro, it->second->arrival_s);
  return it->second;
}

/// The group's work for `op`: the samples, the input it reads in place and the payload
/// it writes in place.
device_work work_for(const stage_state& st, const runtime::schedule_op& op,
                     const std::shared_ptr<received_tensor>& input,
                     const std::optional<outgoing_tensor>& out) {
  const auto& plan = st.allocation->plan;
  device_work work;
  work.kind = static_cast<int32_t>(op.kind);
  work.micro = op.micro;
  work.first_sample = kernels::micro_batch_offset(plan, st.pipeline, op.micro);
  work.samples = plan.micro_batch_size;
  work.loss_scale = runtime::loss_scale(plan.global_batch(), plan.model.context);
  work.recompute = plan.pipelines[size_t(st.pipeline)].stages[size_t(st.stage)].recompute;
  work.batch = st.batch;
  if (input) {
    work.input = values_of(*input);
    work.input_owner = input;
  }
  if (out && out->draft) {
    work.output = out->draft->payload();
    work.output_owner = out->draft;
  }
  return work;
}

/// Wall time: how much longer than its measured time an op started at `start_s` (real
/// seconds) lasts under the script (runtime::held_back_s). Throws job_stopped when a
/// device's node stops for good or is killed first.
double held_back_s(const stage_state& st, double start_s) {
  if (!st.job->wall())
    return 0;
  return runtime::held_back_s(st.costs, start_s, st.job->real_now_s(), st.job->shaping());
}

/// Hands `op` to the group; its answer ends the op and runs what can run next.
void start_on_group(self_ptr self, const runtime::schedule_op& op, double start, double end,
                    const std::shared_ptr<received_tensor>& input,
                    std::optional<outgoing_tensor> out) {
  auto& st = self->state;
  auto work = work_for(st, op, input, out);
  st.op_running = true;
  const auto epoch = st.epoch;
  self->request(st.group, caf::infinite, std::move(work))
      .then(
          [self, epoch, start, end, out = std::move(out)](double loss) mutable {
            auto& s = self->state;
            if (s.epoch != epoch || s.phase != stage_phase::computing)
              return; // an answer of an abandoned step
            try {
              if (const double extra = held_back_s(s, start); extra > 0) {
                s.held = stage_state::held_op{
                    .start = start, .end = end, .loss = loss, .out = std::move(out)};
                self->delayed_send(self, wait_of(extra), slowed_atom_v, epoch);
                return; // the op runs on until then
              }
              s.op_running = false;
              complete_op(self, start, end, loss, std::move(out));
              advance(self);
            } catch (const std::exception& e) {
              report_error(self, e.what());
            }
          },
          group_failure{self});
}

/// The held op's time is up: it ends now, and the list goes on.
void end_held_op(self_ptr self, uint64_t epoch) {
  auto& s = self->state;
  if (s.epoch != epoch || s.phase != stage_phase::computing || !s.held)
    return; // an op of an abandoned step
  auto held = std::move(*s.held);
  s.held.reset();
  s.op_running = false;
  complete_op(self, held.start, held.end, held.loss, std::move(held.out));
  advance(self);
}

/// Starts the ops of the list in order for as long as their inputs are there, one at a time
/// on the group (whose devices compute it in parallel); the stage goes on handling messages
/// meanwhile and takes the next op when the group answers. In virtual and dry time an op
/// starts when both the stage and its input are ready and lasts the profile's time; in wall
/// time it starts now and lasts what it takes. Dry mode skips the math, so its ops end at
/// once. An input stays in its map until its op ends (the devices read it in place, and
/// the send bounds see it).
void run_ready_ops(self_ptr self) {
  auto& st = self->state;
  const bool wall = st.job->wall();
  while (st.phase == stage_phase::computing && !st.op_running && !st.list.done()) {
    const auto op = st.list.next();
    const auto input = settled_input(st, op);
    const double ready = st.list.next_ready_at();
    if (ready == runtime::stage_readiness::not_yet) {
      const auto waits_for = runtime::input_of(op.kind, st.place);
      if (waits_for == op_input::own_forward || waits_for == op_input::own_backward)
        throw std::logic_error(runtime::to_string(op) + " before its own dependency");
      return; // its input is not there yet
    }
    const double start = wall ? st.job->real_now_s() : std::max(st.free_at, ready);
    const double end = wall ? start : start + st.costs.op_duration(op.kind, start);
    std::optional<outgoing_tensor> out;
    switch (runtime::output_of(op.kind, st.place)) {
    case tensor_flow::activation_to_next:
      out = open_tensor(st, tensor_role::activation, op.micro);
      break;
    case tensor_flow::gradient_to_previous:
      out = open_tensor(st, tensor_role::gradient, op.micro);
      break;
    case tensor_flow::none:
      break;
    }
    if (st.job->dry()) {
      complete_op(self, start, end, 0, std::move(out));
      continue;
    }
    start_on_group(self, op, start, end, input, std::move(out));
    return;
  }
  if (st.phase == stage_phase::computing && !st.op_running && st.list.done())
    finish_compute(self);
}

/// Runs what can run, then promises the next send times to pipes and neighbours.
void advance(self_ptr self) {
  run_ready_ops(self);
  auto& st = self->state;
  if (st.sync.active())
    st.sync.publish(self, st.peers, st.step, runtime::next_send_bounds(progress_of(st)));
}

/// Takes the allocation ordered for the step `step` starts, if any: its op list and costs,
/// and its device split for the group (which gets it before the step's first op).
void adopt_allocation(self_ptr self, int64_t step) {
  auto& st = self->state;
  auto due = st.ordered.take_due(step);
  if (!due)
    return;
  st.allocation = std::move(*due);
  const auto& cluster = *st.allocation->cluster;
  st.ops = cluster.schedule(st.pipeline).stages.at(static_cast<size_t>(st.stage));
  st.costs = cluster.stage(st.pipeline, st.stage);
  if (st.allocation->script)
    st.sync.rescript(self, *st.job, cluster, *st.allocation->script);
  if (st.allocation->order)
    st.sync.rebase(self, *st.job, cluster, *st.allocation->order);
  if (st.group && st.allocation->order)
    self->request(st.group, caf::infinite, *st.allocation->order)
        .then([](int64_t) {}, group_failure{self});
}

/// The coordinator's order of a new allocation from step `r.effective_step` on, between
/// steps: the stage builds its op list and costs now, and takes them when that step starts.
int64_t on_rebalance(self_ptr self, const rebalance& r) {
  auto& st = self->state;
  if (st.phase == stage_phase::computing || st.phase == stage_phase::reducing)
    throw std::logic_error("a rebalance for step " + std::to_string(r.effective_step) +
                           " came while step " + std::to_string(st.step) + " runs");
  if (r.effective_step <= st.step)
    throw std::invalid_argument("a rebalance for step " + std::to_string(r.effective_step) +
                                ", which has started");
  auto next = std::make_shared<stage_allocation>();
  next->plan = st.job->plan_after(r);
  const auto& before = allocation_at(st, r.effective_step);
  next->cluster = before.cluster->with_plan(next->plan); // under the script in force
  next->order = r;
  if (st.ordered.entries().contains(r.effective_step))
    next->script = before.script;
  st.ordered.put(r.effective_step, std::move(next));
  return r.effective_step;
}

/// The coordinator's script from step `u.step` on (events were injected), between steps:
/// the allocation of that step is rebuilt under it, taken when the step starts, and the
/// stage's pipes get the script then, before its first request of the step.
int64_t on_script_update(self_ptr self, const script_update& u) {
  auto& st = self->state;
  if (st.phase == stage_phase::computing || st.phase == stage_phase::reducing)
    throw std::logic_error("a script update for step " + std::to_string(u.step) +
                           " came while step " + std::to_string(st.step) + " runs");
  if (u.step <= st.step)
    throw std::invalid_argument("a script update for step " + std::to_string(u.step) +
                                ", which has started");
  runtime::check_fits(u.script, st.job->cluster->hardware());
  const auto& before = allocation_at(st, u.step);
  auto next = std::make_shared<stage_allocation>();
  next->plan = before.plan;
  next->cluster = before.cluster->with_plan(next->plan, u.script);
  if (st.ordered.entries().contains(u.step))
    next->order = before.order;
  next->script = u;
  st.ordered.put(u.step, std::move(next));
  return u.step;
}

void start_step(self_ptr self, const step_start& order) {
  auto& st = self->state;
  if (st.phase == stage_phase::computing || st.phase == stage_phase::reducing)
    throw std::logic_error("step " + std::to_string(order.step) + " started while step " +
                           std::to_string(st.step) + " runs");
  adopt_allocation(self, order.step);
  const auto& plan = st.allocation->plan;
  const int m = plan.pipelines[static_cast<size_t>(st.pipeline)].micro_batches;
  if (order.micro_batches != runtime::allocation_of(plan).micro_batches)
    throw std::invalid_argument("step " + std::to_string(order.step) +
                                ": the micro-batch counts differ from the allocation the "
                                "coordinator ordered for it");
  st.step = order.step;
  st.phase = stage_phase::computing;
  st.op_running = false;
  ++st.epoch;
  // Virtual and dry time: its first op may begin once the start crossed the link from the
  // coordinator and the devices ran the previous step's optimizer (control messages,
  // runtime/sim/simulator.hpp); wall time meets both for real.
  const double begin = st.job->wall() ? order.start_time : st.costs.step_begin(order.start_time);
  st.list = runtime::op_list_run(st.ops, st.place, m, begin);
  st.free_at = begin;
  st.loss_sum = 0;
  st.records.clear();
  st.own_gradients.clear();
  st.pending_grad_out.clear();
  if (!st.job->dry() && (st.place.first || st.place.last))
    st.batch = std::make_shared<const runtime::token_batch>(st.job->corpus->sample_batch(
        runtime::corpus_split::train, plan.global_batch(), plan.model.context, st.job->train.seed,
        static_cast<uint64_t>(order.step)));
  advance(self);
}

/// Shaped wall time: the held start begins its step once it has arrived and the optimizer
/// step before it is done. The optimizer's order came at once over the real link, so the
/// optimizer step counts as begun when the order would have crossed the emulated one
/// (runtime::step_begin_due_s). The order left the coordinator at the step's end; the
/// start left once the step loop asked for the next step.
void release_held_start(self_ptr self) {
  auto& s = self->state;
  if (!s.held_start || s.optimizing)
    return;
  const auto took = std::exchange(s.optimizer_took, std::nullopt);
  const double due =
      took ? runtime::step_begin_due_s(s.held_start_arrival, s.optimizer_started,
                                       s.costs.control_latency(s.optimizer_started), *took)
           : s.held_start_arrival;
  const double wait = due - s.job->real_now_s();
  if (wait <= 0) {
    const auto order = *std::exchange(s.held_start, std::nullopt);
    start_step(self, order);
    return;
  }
  self->delayed_send(self, wait_of(wait), step_atom_v, s.held_start->step);
}

void on_step_start(self_ptr self, const step_start& order) {
  auto& s = self->state;
  if (!s.job->shaping() || !s.group) {
    start_step(self, order); // its ops reach the devices after the optimizer step
    return;
  }
  s.held_start = order;
  s.held_start_arrival = s.job->real_now_s();
  release_held_start(self);
}

/// The coordinator's order of the optimizer step, once every stage reported step
/// `order.step`: the group steps its devices. The stage answers nothing, because the next
/// step's start follows and CAF keeps the order of messages between two actors: its ops
/// reach each device after this step. A failure comes to the coordinator as an error report.
void on_optimize(self_ptr self, const optimize_order& order) {
  auto& s = self->state;
  s.activations.erase(order.step);
  s.gradients.erase(order.step);
  if (!s.group)
    return;
  s.optimizing = true;
  s.optimizer_started = s.job->real_now_s();
  const auto step = order.step;
  self->request(s.group, caf::infinite, order)
      .then(
          [self](int64_t) {
            auto& st = self->state;
            st.optimizing = false;
            st.optimizer_took = st.job->real_now_s() - st.optimizer_started;
            try {
              release_held_start(self);
            } catch (const std::exception& e) {
              report_error(self, e.what());
            }
          },
          [self, step](caf::error& e) {
            self->state.optimizing = false;
            report_error(self,
                         "the optimizer step of step " + std::to_string(step) + ": " +
                             reason_text(self->system(), e),
                         code_of(e).value_or(messages::error_code::internal));
          });
}

/// A node of the job was lost during step `step`: the stage stops it where it is (its
/// weights and moments are those before the step, as no optimizer step came) so that a new
/// stage may take its layers; answers of the step's ops that still come are ignored.
void drop_step(self_ptr self, int64_t step) {
  auto& s = self->state;
  if (s.step != step || (s.phase != stage_phase::computing && s.phase != stage_phase::reducing))
    return;
  spdlog::debug("{}: step {} dropped (a node of the job was lost)", where(s), step);
  s.phase = stage_phase::idle;
  s.op_running = false;
  s.held.reset();
  ++s.epoch;
}

/// Runs a handler's work; a failure reports the error instead of killing the actor.
template <class Work>
void guarded(self_ptr self, Work&& work) {
  try {
    work();
  } catch (const std::exception& e) {
    report_error(self, e.what());
  }
}

/// When a held message asking for `deliver_at_ns` is due (runtime::release_at_ns): never
/// later than the job's link model allows.
int64_t release_at(stage_state& s, int64_t deliver_at_ns) {
  if (s.max_hold_s < 0)
    s.max_hold_s = runtime::hold_limit_s(*s.job->cluster, s.job->plan);
  return runtime::release_at_ns(job_context::steady_now_ns(), deliver_at_ns, s.max_hold_s);
}

void keep_tensor(self_ptr self, accepted_tensor& t) {
  auto& s = self->state;
  auto& slot = t.role == tensor_role::activation ? s.activations : s.gradients;
  slot[t.step][t.micro] = std::make_shared<received_tensor>(std::move(t.tensor));
  advance(self);
}

void keep_share(self_ptr self, gradient_share& share) {
  auto& s = self->state;
  s.shares[share.step].push_back(std::move(share));
  try_reduce(self);
}

/// Takes the held tensors and shares that are due, each sender's in order, and wakes the
/// stage by `release` when the next one is.
void release_due(self_ptr self) {
  auto& s = self->state;
  const auto now = job_context::steady_now_ns();
  for (auto& t : s.held_tensors.take_due(now))
    keep_tensor(self, t);
  for (auto& share : s.held_shares.take_due(now))
    keep_share(self, share);
  for (const auto at : {s.held_tensors.wake_at(), s.held_shares.wake_at()})
    if (at)
      self->delayed_send(self, std::chrono::microseconds(runtime::wake_timer_us(now, *at)),
                         release_atom_v);
}

void on_wiring(self_ptr self, const stage_wiring& w) {
  auto& s = self->state;
  s.peers.clear();
  for (const auto& p : w.stages)
    s.peers.push_back(caf::actor_cast<stage_actor>(p));
  s.coordinator = caf::actor_cast<coordinator_actor>(w.coordinator);
  s.links.set_adapter(caf::actor_cast<adapter_actor>(w.adapter));
  s.boot_ids = w.boot_ids;
  if (s.group) // its devices on other nodes, by place
    if (auto handed = devices_apart(*s.job, s.pipeline, s.stage, w); !handed.empty())
      self->send(s.group, devices_atom_v, std::move(handed), w.boot_ids);
  s.sync.wire(w.pipes);
  if (s.phase == stage_phase::unwired)
    s.phase = stage_phase::idle;
  if (auto order = std::exchange(s.unwired_order, std::nullopt))
    on_step_start(self, *order);
}

/// A malformed tensor is dropped, counted and logged: the step goes on with the well-formed
/// one, or the coordinator's step timeout names the stuck stage.
void on_tensor(self_ptr self, tensor_msg& msg) {
  auto& s = self->state;
  const auto arrived_ns = msg.arrived_ns;
  auto accepted = accept_tensor(s, msg);
  if (auto* why = std::get_if<std::string>(&accepted)) {
    ++s.dropped;
    spdlog::warn("{}: dropped a malformed tensor ({}), {} so far", where(s), *why, s.dropped);
    return;
  }
  auto& t = std::get<accepted_tensor>(accepted);
  if (s.job->wall() && !s.job->mode.shape_links)
    report_arrival(self, t, arrived_ns);
  if (const auto& h = t.tensor.decoded.header; h.deliver_at_ns != 0 && s.job->shaping()) {
    s.held_tensors.push(s.job->flat_index(h.pipeline, h.stage), release_at(s, h.deliver_at_ns),
                        std::move(t));
    release_due(self);
    return;
  }
  keep_tensor(self, t);
}

void on_share(self_ptr self, gradient_share& share) {
  auto& s = self->state;
  if (auto why = check_share(s, share); !why.empty()) {
    ++s.dropped;
    spdlog::warn("{}: dropped a malformed {}, {} so far", where(s), why, s.dropped);
    return;
  }
  if (share.deliver_at_ns != 0 && s.job->shaping()) {
    const std::pair<int, int> line{share.pipeline, share.stage};
    const auto at = release_at(s, share.deliver_at_ns);
    s.held_shares.push(line, at, std::move(share));
    release_due(self);
    return;
  }
  keep_share(self, share);
}

/// What the stage runs, from the plan and the emulated cluster.
void init_stage(self_ptr self, std::shared_ptr<job_context> job, int pipeline, int stage) {
  auto& st = self->state;
  st.job = job;
  st.pipeline = pipeline;
  st.stage = stage;
  const auto& sp =
      job->plan.pipelines.at(static_cast<size_t>(pipeline)).stages.at(static_cast<size_t>(stage));
  st.first_layer = sp.first_layer;
  st.last_layer = sp.last_layer;
  const auto& schedule = job->cluster->schedule(pipeline);
  st.place = {sp.first_layer == 0, sp.last_layer == job->plan.model.n_layer + 2,
              schedule.fused_backward};
  if (!job->dry())
    st.group = spawn_group(self, job, pipeline, stage);
  auto initial = std::make_shared<stage_allocation>();
  initial->plan = job->plan;
  initial->cluster = job->cluster;
  st.allocation = std::move(initial);
  st.ops = schedule.stages.at(static_cast<size_t>(stage));
  st.costs = job->cluster->stage(pipeline, stage);
  st.sync.init(*job, *job->cluster, pipeline, stage);
}

stage_actor::behavior_type stage_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                          int pipeline, int stage) {
  self->set_default_handler(drop_unexpected);
  init_stage(self, std::move(job), pipeline, stage);
  return {
      [self](const stage_wiring& w) { guarded(self, [&] { on_wiring(self, w); }); },
      [self](const step_start& order) {
        guarded(self, [&] {
          if (self->state.phase == stage_phase::unwired)
            self->state.unwired_order = order;
          else
            on_step_start(self, order);
        });
      },
      [self](step_atom, int64_t step) {
        guarded(self, [&] {
          auto& s = self->state;
          if (s.held_start && s.held_start->step == step)
            start_step(self, *std::exchange(s.held_start, std::nullopt));
        });
      },
      [self](lost_atom, int64_t step) { drop_step(self, step); },
      [self](tensor_msg& msg) { guarded(self, [&] { on_tensor(self, msg); }); },
      [self](gradient_share& share) { guarded(self, [&] { on_share(self, share); }); },
      [self](release_atom) {
        guarded(self, [&] {
          self->state.held_tensors.woken();
          self->state.held_shares.woken();
          release_due(self);
        });
      },
      [self](const optimize_order& order) { guarded(self, [&] { on_optimize(self, order); }); },
      [self](const send_horizon& h) {
        guarded(self, [&] {
          self->state.sync.on_horizon(h);
          advance(self);
        });
      },
      [self](const pipe_arrival& a) {
        guarded(self, [&] {
          self->state.sync.on_arrival(a);
          advance(self);
        });
      },
      [self](snapshot_atom) -> caf::result<stage_snapshot> { return answer_snapshot(self); },
      [self](restore_atom, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        return answer_restore(self, snapshot);
      },
      [self](snapshot_atom, int32_t layer) -> caf::result<stage_snapshot> {
        return answer_layer_snapshot(self, layer);
      },
      [self](move_atom, layer_holders& from) -> caf::result<int64_t> {
        return take_layers(self, std::move(from.stages), from.step, from.kept);
      },
      [self](keep_atom, int64_t step, const caf::strong_actor_ptr& keeper) {
        guarded(self, [&] { take_snapshot(self, step, keeper); });
      },
      [self](keep_atom, stage_snapshot& snapshot, uint64_t digest) {
        keep_snapshot(self, snapshot, digest);
      },
      [self](snapshot_atom, int32_t layer, int64_t step) -> caf::result<stage_snapshot> {
        return answer_kept_layer(self, layer, step);
      },
      [self](slowed_atom, uint64_t epoch) { guarded(self, [&] { end_held_op(self, epoch); }); },
      [self](const rebalance& r) -> caf::result<int64_t> {
        try {
          return on_rebalance(self, r);
        } catch (const std::exception& e) {
          return make_error(messages::error_code::bad_input, where(self->state) + ": " + e.what());
        }
      },
      [self](const script_update& u) -> caf::result<int64_t> {
        try {
          return on_script_update(self, u);
        } catch (const std::exception& e) {
          return make_error(messages::error_code::bad_input, where(self->state) + ": " + e.what());
        }
      },
  };
}

} // namespace

const stage_allocation& allocation_at(const stage_state& st, int64_t step) {
  const auto* ordered = st.ordered.in_force_at(step);
  return ordered ? **ordered : *st.allocation;
}

const runtime::plan& plan_at(const stage_state& st, int64_t step) {
  return allocation_at(st, step).plan;
}

stage_actor spawn_stage(caf::actor_system& sys, std::shared_ptr<job_context> job, int pipeline,
                        int stage) {
  // What the stage runs is looked up here, in the caller: a stage the emulated cluster
  // does not know fails the job's setup with its name, not a step by timeout.
  const auto& schedule = job->cluster->schedule(pipeline);
  if (stage < 0 || static_cast<size_t>(stage) >= schedule.stages.size() ||
      stage >= job->stage_count(pipeline))
    throw std::invalid_argument("pipeline " + std::to_string(pipeline) + " stage " +
                                std::to_string(stage) + ": no op list in the emulated cluster");
  return sys.spawn(stage_behavior, std::move(job), pipeline, stage);
}

} // namespace deepcee::actors
