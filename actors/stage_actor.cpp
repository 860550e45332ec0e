#include "actors/stage_actor.hpp"
#include "actors/wire_format.hpp"

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

/// A failed handler never kills the actor: the coordinator fails the step with the reason.
void report_error(self_ptr self, const std::string& what) {
  auto& st = self->state;
  st.running = false;
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
std::string check_share(const stage_state& st, const grad_share& share) {
  if (!st.group)
    return "gradient share in dry mode, where no stage has gradients";
  const int first = st.group->first_layer(), last = st.group->last_layer();
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
  const size_t want = st.group->gradient_size(share.first_layer, share.last_layer);
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
  r.end_s = st.free_at;
  r.loss_sum = st.loss_sum;
  r.grad_sum_squares = grad_sum_squares;
  r.ops = std::move(st.records);
  r.dropped = st.dropped;
  return r;
}

/// Element offset of layer `l` inside a gradient vector that starts at layer `first`.
size_t offset_of(stage_state& st, int first, int l) {
  return st.group->gradient_size(first, l);
}

void try_reduce(self_ptr self) {
  auto& st = self->state;
  if (st.running || st.own_gradients.empty())
    return;
  const int first = st.group->first_layer(), last = st.group->last_layer();
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
  std::vector<float> total = std::move(by_pipeline[0]);
  for (size_t q = 1; q < by_pipeline.size(); ++q)
    for (size_t i = 0; i < n; ++i)
      total[i] += by_pipeline[q][i];
  double sum_squares = 0;
  if (st.pipeline == 0) // pipeline 0 holds every layer exactly once
    for (float v : total)
      sum_squares += static_cast<double>(v) * v;
  st.group->set_gradients(first, last, total);
  st.shares.erase(st.step);
  self->send(st.coordinator, report_of(st, sum_squares));
}

/// The op list is done: send this stage's gradient sums to the other holders of its layers.
void finish_compute(self_ptr self) {
  auto& st = self->state;
  st.running = false;
  if (st.job->dry()) { // no gradients: the coordinator times the all-reduce
    self->send(st.coordinator, report_of(st, 0));
    return;
  }
  const int first = st.group->first_layer(), last = st.group->last_layer();
  st.own_gradients = st.group->gradient_sum(first, last);
  const auto& plan = st.job->plan;
  for (size_t q = 0; q < plan.pipelines.size(); ++q) {
    if (static_cast<int>(q) == st.pipeline)
      continue;
    for (size_t t = 0; t < plan.pipelines[q].stages.size(); ++t) {
      const auto& other = plan.pipelines[q].stages[t];
      const int lo = std::max(first, other.first_layer), hi = std::min(last, other.last_layer);
      if (lo >= hi)
        continue;
      grad_share share;
      share.step = st.step;
      share.pipeline = st.pipeline;
      share.stage = st.stage;
      share.first_layer = lo;
      share.last_layer = hi;
      const auto b = st.own_gradients.begin();
      share.values.assign(b + static_cast<ptrdiff_t>(offset_of(st, first, lo)),
                          b + static_cast<ptrdiff_t>(offset_of(st, first, hi)));
      self->send(st.peers.at(static_cast<size_t>(
                     st.job->flat_index(static_cast<int>(q), static_cast<int>(t)))),
                 std::move(share));
    }
  }
  try_reduce(self);
}

/// Runs ops in list order for as long as their inputs are there. In virtual and dry time
/// an op starts when both the stage and its input are ready and lasts the profile's time;
/// in wall time it starts now and lasts what it takes. Dry mode skips the math.
void run_ready_ops(self_ptr self) {
  auto& st = self->state;
  const auto& plan = st.job->plan;
  const auto& model = plan.model;
  const bool wall = st.job->wall(), math = !st.job->dry();
  const float loss_scale =
      1.0f / static_cast<float>(static_cast<int64_t>(plan.global_batch()) * model.context);
  auto& acts = st.activations[st.step];
  auto& grads = st.gradients[st.step];
  while (st.running && st.next_op < st.ops.size()) {
    const auto op = st.ops[st.next_op];
    const auto i = static_cast<size_t>(op.micro);
    double ready = 0;
    if (op.kind == op_kind::forward) {
      if (st.first)
        ready = st.free_at;
      else if (auto it = acts.find(op.micro);
               it != acts.end() &&
               st.sync.settle(tensor_role::activation, st.step, op.micro, it->second.arrival_s))
        ready = it->second.arrival_s;
      else
        return;
    } else if (op.kind == op_kind::backward_input) {
      if (st.last)
        ready = st.f_end.at(i);
      else if (auto it = grads.find(op.micro);
               it != grads.end() &&
               st.sync.settle(tensor_role::gradient, st.step, op.micro, it->second.arrival_s))
        ready = it->second.arrival_s;
      else
        return;
    } else {
      ready = st.b_end.at(i);
    }
    if (ready < 0)
      throw std::logic_error(runtime::to_string(op) + " before its own dependency");
    const double start = wall ? st.job->real_now_s() : std::max(st.free_at, ready);
    double end = wall ? start : start + st.costs.op_time(op.kind);
    const auto measure_end = [&] {
      if (wall)
        end = st.job->real_now_s();
    };
    switch (op.kind) {
    case op_kind::forward: {
      received_tensor input;
      if (!st.first) {
        input = std::move(acts[op.micro]);
        acts.erase(op.micro);
      }
      const auto compute = [&](std::span<float> out) {
        if (math)
          st.group->forward(op.micro, values_of(input), st.batch,
                            kernels::micro_batch_offset(plan, st.pipeline, op.micro), loss_scale,
                            st.loss_sum, out);
      };
      if (st.last) {
        compute({});
        measure_end();
      } else {
        send_tensor(self, tensor_role::activation, op.micro, end, compute);
      }
      st.f_end[i] = end;
      break;
    }
    case op_kind::backward_input: {
      received_tensor dy;
      if (!st.last) {
        dy = std::move(grads[op.micro]);
        grads.erase(op.micro);
      }
      const auto compute = [&](std::span<float> out) {
        if (math)
          st.group->backward_input(op.micro, values_of(dy), out);
      };
      if (st.first) {
        compute({});
        measure_end();
      } else if (st.fused_backward) {
        // A fused kernel releases the input gradient only when W ends: it waits in a
        // staging buffer (one payload copy more, see send at W).
        auto& staged = st.pending_grad_out[op.micro];
        staged.assign(math ? st.group->boundary_size() : 0, 0.0f);
        compute(staged);
        measure_end();
      } else {
        send_tensor(self, tensor_role::gradient, op.micro, end, compute);
      }
      st.b_end[i] = end;
      break;
    }
    case op_kind::backward_weight:
      if (math)
        st.group->backward_weight(op.micro);
      measure_end();
      if (auto it = st.pending_grad_out.find(op.micro); it != st.pending_grad_out.end()) {
        const auto& staged = it->second;
        if (math)
          ++st.job->counts.payload_copies;
        send_tensor(self, tensor_role::gradient, op.micro, end, [&](std::span<float> out) {
          std::copy(staged.begin(), staged.end(), out.begin());
        });
        st.pending_grad_out.erase(it);
      }
      break;
    }
    st.records.push_back({static_cast<int32_t>(op.kind), op.micro, start, end});
    st.free_at = end;
    ++st.next_op;
  }
  if (st.running && st.next_op == st.ops.size())
    finish_compute(self);
}

/// Runs what can run, then promises the next send times to pipes and neighbours.
void advance(self_ptr self) {
  run_ready_ops(self);
  auto& st = self->state;
  if (st.sync.active())
    st.sync.publish(self, st.peers, st.step, runtime::next_send_bounds(progress_of(st)));
}

void start_step(self_ptr self, const step_order& order) {
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
  st.next_op = 0;
  st.free_at = order.start_s;
  st.loss_sum = 0;
  st.records.clear();
  st.own_gradients.clear();
  st.pending_grad_out.clear();
  st.f_end.assign(static_cast<size_t>(m), -1.0);
  st.b_end.assign(static_cast<size_t>(m), -1.0);
  if (!st.job->dry() && (st.first || st.last))
    st.batch = st.job->corpus->sample_batch(runtime::corpus_split::train, plan.global_batch(),
                                            plan.model.context, st.job->train.seed,
                                            static_cast<uint64_t>(order.step));
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
  st.first = sp.first_layer == 0;
  st.last = sp.last_layer == job->plan.model.n_layer + 2;
  if (!job->dry())
    st.group =
        std::make_unique<device_group>(job->plan.model, sp, job->train.seed, job->train.optimizer);
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
        try {
          s.sync.wire(w.pipes);
          if (auto order = std::exchange(s.unwired_order, std::nullopt))
            start_step(self, *order);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](const step_order& order) {
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
          slot[t.step][t.micro] = std::move(t.tensor);
          advance(self);
        } catch (const std::exception& e) {
          report_error(self, e.what());
        }
      },
      [=](grad_share& share) {
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
        try {
          auto& s = self->state;
          if (s.group)
            s.group->optimizer_step(order.lr, static_cast<int>(order.step), order.grad_norm);
          s.activations.erase(order.step);
          s.gradients.erase(order.step);
          return order.step;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, where(self->state) + ": " + e.what());
        }
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
        try {
          auto snapshot = take_snapshot(self->state);
          const auto& asker = self->current_sender();
          if (asker && asker->node() != self->node())
            if (auto why = too_large_to_send(snapshot); !why.empty())
              throw std::runtime_error(why);
          return snapshot;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, where(self->state) + ": " + e.what());
        }
      },
      [=](restore_atom, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        try {
          restore_snapshot(self->state, snapshot);
          return snapshot.step;
        } catch (const runtime::input_error& e) { // the file's fault: named as such
          return caf::make_error(caf::sec::invalid_argument, std::string(e.what()));
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, where(self->state) + ": " + e.what());
        }
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
