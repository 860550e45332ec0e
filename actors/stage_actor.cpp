#include "actors/stage_actor.hpp"
#include "actors/errors.hpp"
#include "actors/wire_format.hpp"

#include "actors/device_worker.hpp"
#include "actors/group_actor.hpp"
#include "actors/stage_checkpoint.hpp"
#include "actors/stage_tensors.hpp"
#include "kernels/gpt/stage_worker.hpp"
#include "runtime/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace deepcee::actors {

namespace {

using self_ptr = stage_self;
using runtime::op_kind;

std::string where(const stage_state& st) {
  return "pipeline " + std::to_string(st.pipeline) + " stage " + std::to_string(st.stage);
}

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

/// A failed handler never kills the actor: the coordinator fails the step with the reason.
void report_error(self_ptr self, const std::string& what) {
  auto& st = self->state;
  st.running = st.op_running = st.reducing = false;
  stage_report r;
  r.step = st.step;
  r.pipeline = st.pipeline;
  r.stage = st.stage;
  r.error = where(st) + ": " + what;
  if (st.coordinator)
    self->send(st.coordinator, std::move(r));
}

/// Why a gradient share (already decoded and validated as a message) cannot be one for
/// this stage: another pipeline's holder of some of its layers, for its running or next
/// step, with one value per parameter of those layers. Empty when it can.
std::string check_share(const stage_state& st, const gradient_share& share) {
  if (!st.group)
    return "gradient share in dry mode, where no stage has gradients";
  const int first = st.first_layer, last = st.last_layer;
  const auto what = "gradient share of step " + std::to_string(share.step) + " layers [" +
                    std::to_string(share.first_layer) + ", " + std::to_string(share.last_layer) +
                    ") from pipeline " + std::to_string(share.pipeline);
  if (share.pipeline == st.pipeline ||
      share.pipeline >= static_cast<int>(st.job->plan.pipelines.size()))
    return what + " comes from no other pipeline";
  if (share.step < st.step || share.step > st.step + 1)
    return what + " belongs to no step of this stage (step " + std::to_string(st.step) + ")";
  if (share.first_layer < first || share.last_layer > last)
    return what + " is outside this stage's layers [" + std::to_string(first) + ", " +
           std::to_string(last) + ")";
  const size_t want = gradient_size(st.job->plan.model, share.first_layer, share.last_layer);
  if (share.values.size() != want)
    return what + " has " + std::to_string(share.values.size()) + " values, expected " +
           std::to_string(want);
  return {};
}

/// This stage's report of its step: its ops, its loss and the square sum of its reduced
/// gradients (none in dry mode).
stage_report report_of(stage_state& st, double grad_sum_squares) {
  stage_report r;
  r.step = st.step;
  r.pipeline = st.pipeline;
  r.stage = st.stage;
  r.end_time = st.free_at;
  r.loss_sum = st.loss_sum;
  r.grad_sum_squares = grad_sum_squares;
  r.ops = std::move(st.records);
  r.dropped = st.dropped;
  return r;
}

/// Element offset of layer `l` inside a gradient vector that starts at layer `first`.
size_t offset_of(const stage_state& st, int first, int l) {
  return gradient_size(st.job->plan.model, first, l);
}

/// The text of a failed answer (an error that carries our own message, or CAF's).
std::string reason_of(self_ptr self, const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return self->system().render(e);
}

/// What a failed answer of the group does: fails the step it belongs to (unless that step
/// was abandoned since), naming the reason.
auto group_failure(self_ptr self) {
  return [self, epoch = self->state.epoch](caf::error& e) {
    if (self->state.epoch == epoch)
      report_error(self, reason_of(self, e));
  };
}

/// The stage's step is done: its report goes to the coordinator.
void report_step(self_ptr self, double grad_sum_squares) {
  auto& st = self->state;
  st.reducing = false;
  st.own_gradients.clear();
  self->send(st.coordinator, report_of(st, grad_sum_squares));
}

void try_reduce(self_ptr self) {
  auto& st = self->state;
  if (!st.reducing || st.own_gradients.empty())
    return;
  const int first = st.first_layer, last = st.last_layer;
  const int pipelines = static_cast<int>(st.job->plan.pipelines.size());
  auto& shares = st.shares[st.step];
  int covered = 0;
  for (const auto& s : shares)
    covered += s.last_layer - s.first_layer;
  if (covered < (pipelines - 1) * (last - first))
    return;
  // Every holder sums the contributions in pipeline order, so all of them end with
  // bit-identical gradients and hence identical weights.
  std::vector<std::vector<float>> by_pipeline(static_cast<size_t>(pipelines));
  by_pipeline[static_cast<size_t>(st.pipeline)] = std::move(st.own_gradients);
  const size_t n = by_pipeline[static_cast<size_t>(st.pipeline)].size();
  for (auto& s : shares) {
    auto& dst = by_pipeline.at(static_cast<size_t>(s.pipeline));
    dst.resize(n, 0.0f);
    const size_t at = offset_of(st, first, s.first_layer);
    if (at + s.values.size() > n)
      throw std::invalid_argument("gradient share of layers [" + std::to_string(s.first_layer) +
                                  ", " + std::to_string(s.last_layer) + ") does not fit");
    std::copy(s.values.begin(), s.values.end(), dst.begin() + static_cast<ptrdiff_t>(at));
  }
  st.shares.erase(st.step);
  std::vector<float> total = std::move(by_pipeline[0]);
  for (size_t q = 1; q < by_pipeline.size(); ++q)
    for (size_t i = 0; i < n; ++i)
      total[i] += by_pipeline[q][i];
  double sum_squares = 0;
  if (st.pipeline == 0) // pipeline 0 holds every layer exactly once
    for (float v : total)
      sum_squares += static_cast<double>(v) * v;
  st.own_gradients.clear();
  const auto epoch = st.epoch;
  self->request(st.group, caf::infinite, gradient_values{st.step, std::move(total)})
      .then(
          [=](int64_t) {
            if (self->state.epoch == epoch)
              report_step(self, sum_squares);
          },
          group_failure(self));
}

/// Sends this stage's gradient sums (over its devices) to the other holders of its layers.
void send_shares(self_ptr self) {
  auto& st = self->state;
  const int first = st.first_layer, last = st.last_layer;
  const auto& plan = st.job->plan;
  for (size_t q = 0; q < plan.pipelines.size(); ++q) {
    if (static_cast<int>(q) == st.pipeline)
      continue;
    for (size_t t = 0; t < plan.pipelines[q].stages.size(); ++t) {
      const auto& other = plan.pipelines[q].stages[t];
      const int lo = std::max(first, other.first_layer), hi = std::min(last, other.last_layer);
      if (lo >= hi)
        continue;
      gradient_share share;
      share.step = st.step;
      share.pipeline = st.pipeline;
      share.stage = st.stage;
      share.first_layer = lo;
      share.last_layer = hi;
      const auto b = st.own_gradients.begin();
      share.values.assign(b + static_cast<ptrdiff_t>(offset_of(st, first, lo)),
                          b + static_cast<ptrdiff_t>(offset_of(st, first, hi)));
      const int k = st.job->flat_index(static_cast<int>(q), static_cast<int>(t));
      const auto& peer = st.peers.at(static_cast<size_t>(k));
      // Dropped on the way, a share too large for one message would leave the step waiting.
      if (peer->node() != self->node() && share.values.size() > messages::max_payload_floats)
        throw std::runtime_error("the gradients of layers [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + ") for " + st.job->stage_name(k) + " are " +
                                 std::to_string(share.values.size()) +
                                 " values, more than one message between nodes carries");
      self->send(peer, std::move(share));
    }
  }
}

/// The op list is done: the group all-reduces its devices' gradients (a ring, or NCCL),
/// then the stage exchanges the sum with the other pipelines' holders of its layers; in a
/// job of one pipeline it needs only the sum's squares, taken on its first device.
void finish_compute(self_ptr self) {
  auto& st = self->state;
  st.running = false;
  if (st.job->dry()) { // no gradients: the coordinator times the all-reduce
    self->send(st.coordinator, report_of(st, 0));
    return;
  }
  st.reducing = true;
  const auto epoch = st.epoch;
  if (st.job->plan.pipelines.size() == 1) { // no other holder: the sums stay on the devices
    self->request(st.group, caf::infinite, squares_atom_v, st.step)
        .then(
            [=](double sum_squares) {
              if (self->state.epoch == epoch)
                report_step(self, sum_squares);
            },
            group_failure(self));
    return;
  }
  self->request(st.group, caf::infinite, reduce_atom_v, st.step)
      .then(
          [=](std::vector<float>& sum) {
            auto& s = self->state;
            if (s.epoch != epoch)
              return;
            try {
              s.own_gradients = std::move(sum);
              send_shares(self);
              try_reduce(self);
            } catch (const std::exception& e) {
              report_error(self, e.what());
            }
          },
          group_failure(self));
}

void advance(self_ptr self);

/// The op `next_op` has ended at `end` (virtual and dry time; wall time measures it now):
/// its tensor leaves (a fused B's waits for its W), and the stage moves to the next op.
void complete_op(self_ptr self, double start, double end, double loss,
                 std::optional<outgoing_tensor> out) {
  auto& st = self->state;
  const auto op = st.ops[st.next_op];
  const auto i = static_cast<size_t>(op.micro);
  if (st.job->wall())
    end = st.job->real_now_s();
  switch (op.kind) {
  case op_kind::forward:
    if (st.last)
      st.loss_sum += loss;
    else
      send_tensor(self, *out, end);
    st.activations[st.step].erase(op.micro);
    st.f_end[i] = end;
    break;
  case op_kind::backward_input:
    // A fused kernel releases the input gradient only when W ends: its message waits.
    if (out && st.fused_backward)
      st.pending_grad_out.emplace(op.micro, std::move(*out));
    else if (out)
      send_tensor(self, *out, end);
    st.gradients[st.step].erase(op.micro);
    st.b_end[i] = end;
    break;
  case op_kind::backward_weight:
    if (auto it = st.pending_grad_out.find(op.micro); it != st.pending_grad_out.end()) {
      send_tensor(self, it->second, end);
      st.pending_grad_out.erase(it);
    }
    break;
  }
  st.records.push_back({static_cast<int32_t>(op.kind), op.micro, start, end});
  st.free_at = end;
  ++st.next_op;
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
  const auto& plan = st.job->plan;
  const auto& model = plan.model;
  const bool wall = st.job->wall(), math = !st.job->dry();
  auto& acts = st.activations[st.step];
  auto& grads = st.gradients[st.step];
  while (st.running && !st.op_running && st.next_op < st.ops.size()) {
    const auto op = st.ops[st.next_op];
    const auto i = static_cast<size_t>(op.micro);
    std::shared_ptr<received_tensor> input;
    double ready = 0;
    if (op.kind == op_kind::forward) {
      if (st.first)
        ready = st.free_at;
      else if (auto it = acts.find(op.micro);
               it != acts.end() &&
               st.sync.settle(tensor_role::activation, st.step, op.micro, it->second->arrival_s))
        ready = (input = it->second)->arrival_s;
      else
        return;
    } else if (op.kind == op_kind::backward_input) {
      if (st.last)
        ready = st.f_end.at(i);
      else if (auto it = grads.find(op.micro);
               it != grads.end() &&
               st.sync.settle(tensor_role::gradient, st.step, op.micro, it->second->arrival_s))
        ready = (input = it->second)->arrival_s;
      else
        return;
    } else {
      ready = st.b_end.at(i);
    }
    if (ready < 0)
      throw std::logic_error(runtime::to_string(op) + " before its own dependency");
    const double start = wall ? st.job->real_now_s() : std::max(st.free_at, ready);
    const double end = wall ? start : start + st.costs.op_time(op.kind);
    std::optional<outgoing_tensor> out;
    if (op.kind == op_kind::forward && !st.last)
      out = open_tensor(st, tensor_role::activation, op.micro);
    else if (op.kind == op_kind::backward_input && !st.first)
      out = open_tensor(st, tensor_role::gradient, op.micro);
    if (!math) {
      complete_op(self, start, end, 0, std::move(out));
      continue;
    }
    device_work work;
    work.kind = static_cast<int32_t>(op.kind);
    work.micro = op.micro;
    work.first_sample = kernels::micro_batch_offset(plan, st.pipeline, op.micro);
    work.samples = plan.micro_batch_size;
    work.loss_scale =
        1.0f / static_cast<float>(static_cast<int64_t>(plan.global_batch()) * model.context);
    work.batch = st.batch;
    if (input) {
      work.input = values_of(*input);
      work.input_owner = input;
    }
    if (out && out->draft) {
      work.output = out->draft->payload();
      work.output_owner = out->draft;
    }
    st.op_running = true;
    const auto epoch = st.epoch;
    self->request(st.group, caf::infinite, std::move(work))
        .then(
            [=](double loss) mutable {
              auto& s = self->state;
              if (s.epoch != epoch || !s.running)
                return; // an answer of an abandoned step
              s.op_running = false;
              try {
                complete_op(self, start, end, loss, std::move(out));
                advance(self);
              } catch (const std::exception& e) {
                report_error(self, e.what());
              }
            },
            group_failure(self));
    return;
  }
  if (st.running && !st.op_running && st.next_op == st.ops.size())
    finish_compute(self);
}

/// Runs what can run, then promises the next send times to pipes and neighbours.
void advance(self_ptr self) {
  run_ready_ops(self);
  auto& st = self->state;
  if (st.sync.active())
    st.sync.publish(self, st.peers, st.step, runtime::next_send_bounds(progress_of(st)));
}

void start_step(self_ptr self, const step_start& order) {
  auto& st = self->state;
  if (st.running)
    throw std::logic_error("step " + std::to_string(order.step) + " started while step " +
                           std::to_string(st.step) + " runs");
  const auto& plan = st.job->plan;
  const int m = plan.pipelines[static_cast<size_t>(st.pipeline)].micro_batches;
  if (order.micro_batches.size() != plan.pipelines.size() ||
      order.micro_batches[static_cast<size_t>(st.pipeline)] != m)
    throw std::invalid_argument("micro-batch counts differ from the plan's (rebalancing is "
                                "not implemented yet)");
  st.step = order.step;
  st.running = true;
  st.op_running = st.reducing = false;
  ++st.epoch;
  st.next_op = 0;
  st.free_at = order.start_time;
  st.loss_sum = 0;
  st.records.clear();
  st.own_gradients.clear();
  st.pending_grad_out.clear();
  st.f_end.assign(static_cast<size_t>(m), -1.0);
  st.b_end.assign(static_cast<size_t>(m), -1.0);
  if (!st.job->dry() && (st.first || st.last))
    st.batch = std::make_shared<const runtime::token_batch>(st.job->corpus->sample_batch(
        runtime::corpus_split::train, plan.global_batch(), plan.model.context, st.job->train.seed,
        static_cast<uint64_t>(order.step)));
  advance(self);
}

stage_actor::behavior_type stage_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                          int pipeline, int stage) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.job = job;
  st.pipeline = pipeline;
  st.stage = stage;
  const auto& sp =
      job->plan.pipelines.at(static_cast<size_t>(pipeline)).stages.at(static_cast<size_t>(stage));
  st.first_layer = sp.first_layer;
  st.last_layer = sp.last_layer;
  st.first = sp.first_layer == 0;
  st.last = sp.last_layer == job->plan.model.n_layer + 2;
  if (!job->dry())
    st.group = spawn_group(self, job, pipeline, stage);
  const auto& schedule = job->cluster->schedule(pipeline);
  st.ops = schedule.stages.at(static_cast<size_t>(stage));
  st.fused_backward = schedule.fused_backward;
  st.costs = job->cluster->stage(pipeline, stage);
  st.sync.init(*job, pipeline, stage);
  return {
      [=](const stage_wiring& w) {
        auto& s = self->state;
        s.peers.clear();
        for (const auto& p : w.stages)
          s.peers.push_back(caf::actor_cast<stage_actor>(p));
        s.coordinator = caf::actor_cast<coordinator_actor>(w.coordinator);
        s.links.set_adapter(caf::actor_cast<adapter_actor>(w.adapter));
        if (s.group) // its devices on other nodes, by place
          if (auto handed = devices_apart(*job, pipeline, stage, w); !handed.empty())
            self->send(s.group, devices_atom_v, std::move(handed));
        try {
          s.sync.wire(w.pipes);
          if (auto order = std::exchange(s.unwired_order, std::nullopt))
            start_step(self, *order);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](const step_start& order) {
        try {
          if (self->state.peers.empty()) {
            self->state.unwired_order = order;
            return;
          }
          start_step(self, order);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](tensor_msg& msg) {
        try {
          auto& s = self->state;
          // A malformed message is dropped, counted and logged: the step goes on with the
          // well-formed one, or the coordinator's step timeout names the stuck stage.
          auto accepted = accept_tensor(s, msg);
          if (auto* why = std::get_if<std::string>(&accepted)) {
            ++s.dropped;
            spdlog::warn("{}: dropped a malformed tensor ({}), {} so far", where(s), *why,
                         s.dropped);
            return;
          }
          auto& t = std::get<accepted_tensor>(accepted);
          if (s.job->wall() && !s.job->mode.shape_links)
            report_arrival(self, t);
          auto& slot = t.role == tensor_role::activation ? s.activations : s.gradients;
          slot[t.step][t.micro] = std::make_shared<received_tensor>(std::move(t.tensor));
          advance(self);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](gradient_share& share) {
        try {
          auto& s = self->state;
          if (auto why = check_share(s, share); !why.empty()) {
            ++s.dropped;
            spdlog::warn("{}: dropped a malformed {}, {} so far", where(s), why, s.dropped);
            return;
          }
          self->state.shares[share.step].push_back(std::move(share));
          try_reduce(self);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](const optimize_order& order) -> caf::result<int64_t> {
        auto& s = self->state;
        s.activations.erase(order.step);
        s.gradients.erase(order.step);
        if (!s.group)
          return order.step;
        return self->delegate(s.group, order);
      },
      [=](const send_horizon& h) {
        try {
          self->state.sync.on_horizon(h);
          advance(self);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](const pipe_arrival& a) {
        try {
          self->state.sync.on_arrival(a);
          advance(self);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](snapshot_atom) -> caf::result<stage_snapshot> {
        auto& s = self->state;
        auto promise = self->make_response_promise<stage_snapshot>();
        try {
          require_weights_between_steps(s, "a snapshot");
        } catch (const std::exception& e) {
          promise.deliver(make_error(messages::error_code::internal, where(s) + ": " + e.what()));
          return promise;
        }
        const auto& asker = self->current_sender();
        const bool remote = asker && asker->node() != self->node();
        self->request(s.group, caf::infinite, snapshot_atom_v)
            .then(
                [=](std::vector<kernels::parameter_state>& params) mutable {
                  auto snapshot = snapshot_of(self->state, std::move(params));
                  if (remote)
                    if (auto why = too_large_to_send(snapshot); !why.empty()) {
                      promise.deliver(make_error(messages::error_code::internal,
                                                 where(self->state) + ": " + why));
                      return;
                    }
                  promise.deliver(std::move(snapshot));
                },
                [=](caf::error& e) mutable { promise.deliver(std::move(e)); });
        return promise;
      },
      [=](restore_atom, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        auto& s = self->state;
        try {
          require_weights_between_steps(s, "a restore");
        } catch (const std::exception& e) {
          return make_error(messages::error_code::internal, where(s) + ": " + e.what());
        }
        auto promise = self->make_response_promise<int64_t>();
        self->request(s.group, caf::infinite, restore_atom_v, snapshot)
            .then(
                [=](int64_t step) mutable {
                  self->state.step = step;
                  promise.deliver(step);
                },
                [=](caf::error& e) mutable { promise.deliver(std::move(e)); });
        return promise;
      },
  };
}

} // namespace

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
