#include "actors/device/device_actor.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include "kernels/device/make_backend.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/schedule/schedule.hpp"
#include "runtime/step/device_rows_check.hpp"

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::actors {

namespace {

using self_ptr = device_actor::stateful_pointer<device_state>;

caf::error failure(self_ptr self, const std::exception& e) {
  return make_error(messages::error_code::internal, self->state.where + ": " + e.what());
}

/// The device's worker, or why it has none (its backend failed at start).
device_worker& worker(self_ptr self) {
  auto& st = self->state;
  if (!st.worker)
    throw std::runtime_error(st.broken);
  return *st.worker;
}

double run(device_worker& w, const device_work& work) {
  switch (static_cast<runtime::op_kind>(work.kind)) {
  case runtime::op_kind::forward:
    w.set_recompute(work.recompute);
    return w.forward(work.micro, work.input, work.batch.get(), work.first_sample, work.samples,
                     work.loss_scale, work.output);
  case runtime::op_kind::backward_input:
    w.backward_input(work.micro, work.input, work.samples, work.output);
    return 0;
  case runtime::op_kind::backward_weight:
    w.backward_weight(work.micro);
    return 0;
  }
  throw std::invalid_argument("op kind " + std::to_string(work.kind));
}

/// Runs a device_rows of a stage on another node. The rows came from the network, so they
/// are checked before anything is allocated (runtime::device_rows_refusal). They make a
/// batch of their own, and the rows the op writes are the answer.
device_output run_rows(device_worker& w, const runtime::model_config& model, int samples,
                       const device_rows& rows) {
  const runtime::rows_request request{.kind = static_cast<runtime::op_kind>(rows.kind),
                                      .micro = rows.micro_batch,
                                      .samples = rows.samples,
                                      .output_values = rows.output_values,
                                      .tokens = rows.tokens,
                                      .targets = rows.targets};
  if (auto why = runtime::device_rows_refusal(request, samples, model, w.first(), w.last());
      !why.empty())
    throw std::invalid_argument(why);
  device_output out;
  out.output.resize(static_cast<size_t>(rows.output_values));
  device_work work;
  work.kind = rows.kind;
  work.micro = rows.micro_batch;
  work.samples = samples; // its samples are the whole batch here: first_sample 0
  work.loss_scale = rows.loss_scale;
  work.recompute = rows.recompute;
  work.batch = std::make_shared<const runtime::token_batch>(
      runtime::token_batch{samples, model.context, rows.tokens, rows.targets});
  work.input = rows.input;
  work.output = out.output;
  const auto began = std::chrono::steady_clock::now();
  out.loss = run(w, work);
  w.backend().synchronize();
  out.compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

/// Moves the ring on as far as the rounds at hand allow: sends this round's chunk once,
/// applies the previous device's chunk of this round when it is here; at the end the
/// device keeps the sums as its gradients and answers the reduce.
void pump(self_ptr self) {
  auto& st = self->state;
  while (st.ring && !st.ring->done()) {
    if (!st.sent_round) {
      auto c = st.ring->outgoing();
      const auto next = caf::actor_cast<device_actor>(st.next);
      if (st.hop) { // arrives when the link model says its last byte does
        st.hop->bytes = static_cast<double>(c.values.size() * sizeof(float));
        const double now = st.job->real_now_s();
        const double arrival = st.job->shaped.send(*st.hop, now).arrival_s;
        if (st.hold_at_next) { // the next device holds it until then
          self->send(next, ring_chunk{.step = st.ring_step,
                                      .round = c.round,
                                      .values = std::move(c.values),
                                      .deliver_at_ns = st.job->steady_ns_at(arrival)});
        } else {
          self->delayed_send(
              next, wait_of(arrival - now),
              ring_chunk{.step = st.ring_step, .round = c.round, .values = std::move(c.values)});
        }
      } else {
        self->send(
            next,
            ring_chunk{.step = st.ring_step, .round = c.round, .values = std::move(c.values)});
      }
      st.sent_round = true;
    }
    auto it = std::find_if(st.early.begin(), st.early.end(), [&](const ring_chunk& c) {
      return c.step == st.ring_step && c.round == st.ring->round();
    });
    if (it == st.early.end())
      return;
    const ring_chunk c = std::move(*it);
    st.early.erase(it);
    st.ring->receive({c.round, c.values});
    st.sent_round = false;
  }
  if (!st.ring)
    return;
  auto values = st.ring->take_values();
  st.ring.reset();
  st.worker->set_gradients(values);
  st.reduced.deliver(gradient_values{
      .step = st.ring_step,
      .values = st.rank == 0 && st.answer_sums ? std::move(values) : std::vector<float>{}});
}

/// A failed ring answers its reduce with the reason and forgets the round.
void fail_ring(self_ptr self, const std::exception& e) {
  auto& st = self->state;
  st.ring.reset();
  st.reduced.deliver(failure(self, e));
}

/// Why chunk `c` from the previous device may not wait for its round (empty: it may).
std::string early_refusal(self_ptr self, const ring_chunk& c) {
  auto& st = self->state;
  if (!st.worker)
    return {}; // the reduce fails with the reason the device has no worker
  std::vector<runtime::ring_round> waiting;
  for (const auto& w : st.early)
    waiting.push_back({w.step, w.round});
  const runtime::ring_position at{.rank = st.rank,
                                  .size = st.size,
                                  .length = st.worker->gradient_size(),
                                  .last_step = st.ring_step,
                                  .applied = st.ring ? st.ring->round() : 0,
                                  .max_chunk = st.ring_chunk_values,
                                  .reducing = st.ring.has_value()};
  return runtime::early_chunk_refusal(waiting, {c.step, c.round}, c.values.size(), at);
}

/// Sets the gradients `g` carries: whole, or a piece of them (runtime::gradient_pieces).
void take_gradients(self_ptr self, gradient_values& g) {
  auto& w = worker(self);
  if (auto whole = self->state.pieces.add(g.step, g.offset, std::move(g.values), w.gradient_size()))
    w.set_gradients(*whole);
}

/// A chunk no honest ring sends: the running reduce fails naming it, or else the next one.
void refuse_chunk(self_ptr self, const std::string& why) {
  auto& st = self->state;
  const auto what = "a ring chunk from the previous device refused: " + why;
  spdlog::error("{}: {}", st.where, what);
  if (st.ring)
    fail_ring(self, std::runtime_error(what));
  else
    st.refused = what;
}

/// Whether `c` is a round of this reduce or a later one that may wait here; a round of a
/// reduce that failed or ended is dropped, one the ring cannot have sent is refused.
bool wanted_chunk(self_ptr self, const ring_chunk& c) {
  auto& s = self->state;
  if (c.step < s.ring_step || (c.step == s.ring_step && !s.ring))
    return false;
  if (const auto why = early_refusal(self, c); !why.empty()) {
    refuse_chunk(self, why);
    return false;
  }
  return true;
}

void take_chunk(self_ptr self, ring_chunk& c) {
  auto& s = self->state;
  if (!wanted_chunk(self, c))
    return;
  s.early.push_back(std::move(c));
  try {
    pump(self);
  } catch (const std::exception& e) {
    fail_ring(self, e);
  }
}

/// Takes the held chunks that are due, in order, and wakes the device by `release` when
/// the next one is.
void release_due(self_ptr self) {
  auto& st = self->state;
  const auto now = job_context::steady_now_ns();
  for (auto& c : st.held.take_due(now))
    take_chunk(self, c);
  if (const auto at = st.held.wake_at())
    self->delayed_send(self, std::chrono::microseconds(runtime::wake_timer_us(now, *at)),
                       release_atom_v);
}

/// A chunk that asks to be held until its modelled arrival waits for it, never longer
/// than the job's link model allows (runtime::release_at_ns).
void hold_chunk(self_ptr self, ring_chunk& c) {
  auto& st = self->state;
  if (!wanted_chunk(self, c))
    return;
  if (st.max_hold_s < 0)
    st.max_hold_s = runtime::hold_limit_s(*st.job->cluster, st.job->plan);
  const auto at =
      runtime::release_at_ns(job_context::steady_now_ns(), c.deliver_at_ns, st.max_hold_s);
  st.held.push(0, at, std::move(c));
  release_due(self);
}

/// Answers what `work` returns; a failure answers with the device's name instead.
template <class Result, class Work>
caf::result<Result> answer_or_failure(self_ptr self, Work&& work) {
  try {
    return work();
  } catch (const std::exception& e) {
    return failure(self, e);
  }
}

/// The group's wiring of the ring: the next device, this one's rank among `size`, and
/// whether the next device holds what this one sends it until its modelled arrival.
void join_ring(self_ptr self, caf::strong_actor_ptr next, int32_t rank, int32_t size,
               bool hold_at_next) {
  auto& s = self->state;
  s.next = caf::actor_cast<caf::actor>(next);
  s.rank = rank;
  s.size = size;
  s.hold_at_next = hold_at_next;
}

/// Starts the ring all-reduce of `step`'s gradients; its answer comes when the ring is
/// done (pump). A device alone answers at once: its gradients are the sums already.
caf::result<gradient_values> start_reduce(self_ptr self, int64_t step, bool answer_sums) {
  auto& s = self->state;
  if (s.size == 1)
    return answer_or_failure<gradient_values>(self, [&] {
      return gradient_values{
          .step = step, .values = answer_sums ? worker(self).gradients() : std::vector<float>{}};
    });
  if (s.ring) // an older reduce that never ended (its step failed elsewhere)
    fail_ring(self, std::runtime_error("reduce of step " + std::to_string(s.ring_step) +
                                       " abandoned: step " + std::to_string(step) + " reduces"));
  s.reduced = self->make_response_promise<gradient_values>();
  s.ring_step = step;
  s.answer_sums = answer_sums;
  s.sent_round = false;
  // Rounds of earlier (failed) steps will never be needed.
  std::erase_if(s.early, [&](const ring_chunk& c) { return c.step < step; });
  try {
    if (!s.refused.empty())
      throw std::runtime_error(std::exchange(s.refused, {}));
    s.ring.emplace(s.rank, s.size, worker(self).gradients(), s.ring_chunk_values);
    pump(self);
  } catch (const std::exception& e) {
    fail_ring(self, e);
  }
  return s.reduced;
}

/// The worker's gradient tensors, for NCCL to sum where they lie.
device_buffers buffers_of(device_worker& w) {
  w.backend().synchronize(); // NCCL reads them next, on its own streams
  device_buffers out;
  for (auto* t : w.gradient_tensors())
    out.buffers.emplace_back(t->f32(), static_cast<size_t>(t->numel()));
  return out;
}

/// The optimizer step of `order`, once every piece of the step's gradients has come.
int64_t optimize(self_ptr self, const optimize_order& order) {
  const auto size = worker(self).gradient_size();
  if (auto why = self->state.pieces.unfinished(order.step, size); !why.empty())
    throw std::runtime_error(why);
  worker(self).optimizer_step(order.learning_rate, static_cast<int>(order.step), order.grad_norm);
  return order.step;
}

/// Loads a snapshot's weights and moments. A malformed snapshot is the file's fault, and
/// its error says so (bad_input).
caf::result<int64_t> restore(self_ptr self, const stage_snapshot& snapshot) {
  try {
    worker(self).load_parameter_states(snapshot.params, snapshot.source);
    return snapshot.step;
  } catch (const runtime::input_error& e) {
    return make_error(messages::error_code::bad_input, e.what());
  } catch (const std::exception& e) {
    return failure(self, e);
  }
}

/// The device's name for errors, its hop of the ring in shaped wall time, and its worker
/// for stage plan `sp`. A worker that cannot be built leaves the reason: every request
/// answers with it, so the step fails and names the device.
void init_device(self_ptr self, const std::shared_ptr<job_context>& job, int pipeline, int stage,
                 int index, const runtime::stage_plan& sp) {
  auto& st = self->state;
  st.ring_chunk_values = job->ring_chunk_values;
  st.job = job;
  if (job->shaping()) {
    const auto& parts = job->cluster->stage(pipeline, stage).ring_parts;
    if (static_cast<size_t>(index) < parts.size())
      st.hop = parts[static_cast<size_t>(index)];
  }
  st.where = "pipeline " + std::to_string(pipeline) + " stage " + std::to_string(stage) +
             " device " + std::to_string(index);
  const int flat = job->flat_index(pipeline, stage);
  if (job->layout.apart(flat, index)) // its errors reach another node: they name this one
    st.where += " (node " + job->slot_node_name(job->layout.slot(flat, index)) + ")";
  const auto backend = device_backend(*job, sp.devices.at(static_cast<size_t>(index)));
  try {
    st.worker = std::make_unique<device_worker>(job->plan.model, sp.first_layer, sp.last_layer,
                                                job->train.seed, job->train.optimizer, backend);
  } catch (const std::exception& e) {
    st.broken = e.what();
    spdlog::error("{}: {}", st.where, st.broken);
  }
}

} // namespace

std::vector<device_actor> spawn_devices_apart(caf::actor_system& sys,
                                              const std::shared_ptr<job_context>& job, int node) {
  std::vector<device_actor> out;
  for (int32_t slot : job->layout.apart_on(node)) {
    if (job->dry()) {
      out.emplace_back();
      continue;
    }
    const int flat = job->layout.slot_stage.at(static_cast<size_t>(slot));
    const auto [pipeline, stage] = job->stage_at(static_cast<size_t>(flat));
    out.push_back(sys.spawn(device_behavior, job, pipeline, stage,
                            slot - job->layout.first_slot.at(static_cast<size_t>(flat))));
  }
  return out;
}

kernels::backend_options device_backend(const job_context& job, int device) {
  return device_backend(job.train, job.local_index.at(static_cast<size_t>(device)),
                        kernels::visible_cuda_devices());
}

device_actor::behavior_type device_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                            int pipeline, int stage, int index) {
  const auto sp =
      job->plan.pipelines.at(static_cast<size_t>(pipeline)).stages.at(static_cast<size_t>(stage));
  init_device(self, job, pipeline, stage, index, sp);
  return {
      [self](const device_work& work) -> caf::result<double> {
        return answer_or_failure<double>(self, [&] { return run(worker(self), work); });
      },
      [self, job, sp, index](const device_rows& rows) -> caf::result<device_output> {
        return answer_or_failure<device_output>(self, [&] {
          const int samples = sp.samples.at(static_cast<size_t>(index));
          return run_rows(worker(self), job->plan.model, samples, rows);
        });
      },
      [self](ring_atom, caf::strong_actor_ptr next, int32_t rank, int32_t size, bool hold_at_next) {
        join_ring(self, std::move(next), rank, size, hold_at_next);
      },
      [self](reduce_atom, int64_t step, bool answer_sums) -> caf::result<gradient_values> {
        return start_reduce(self, step, answer_sums);
      },
      [self, job](ring_chunk& c) {
        if (c.deliver_at_ns != 0 && job->shaping())
          hold_chunk(self, c);
        else
          take_chunk(self, c);
      },
      [self](release_atom) {
        self->state.held.woken();
        release_due(self);
      },
      [](release_atom, uint64_t) {}, // a stand-in's held answer (remote_device.hpp): none here
      [self](buffers_atom) -> caf::result<device_buffers> {
        return answer_or_failure<device_buffers>(self, [&] { return buffers_of(worker(self)); });
      },
      [self](gradients_atom) -> caf::result<std::vector<float>> {
        return answer_or_failure<std::vector<float>>(self,
                                                     [&] { return worker(self).gradients(); });
      },
      [self](squares_atom) -> caf::result<double> {
        return answer_or_failure<double>(self, [&] { return worker(self).gradient_sum_squares(); });
      },
      [self](gradient_values& g) -> caf::result<int64_t> {
        return answer_or_failure<int64_t>(self, [&] {
          take_gradients(self, g);
          return g.step;
        });
      },
      [self](const optimize_order& order) -> caf::result<int64_t> {
        return answer_or_failure<int64_t>(self, [&] { return optimize(self, order); });
      },
      [self](snapshot_atom) -> caf::result<std::vector<kernels::parameter_state>> {
        return answer_or_failure<std::vector<kernels::parameter_state>>(
            self, [&] { return worker(self).parameter_states(); });
      },
      [self](digest_atom) -> caf::result<uint64_t> {
        return answer_or_failure<uint64_t>(
            self, [&] { return state_digest(worker(self).parameter_states()); });
      },
      [self](restore_atom, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        return restore(self, snapshot);
      },
  };
}

} // namespace deepcee::actors
