#include "actors/device/remote_device.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/wire_format.hpp"
#include "messages/codec.hpp"
#include "runtime/schedule/schedule.hpp"
#include "runtime/sim/simulator.hpp"

#include <caf/sec.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

namespace {

using self_ptr = device_actor::stateful_pointer<remote_device_state>;

caf::error failure(self_ptr self, const std::string& why) {
  return make_error(messages::error_code::internal, self->state.where + ": " + why);
}

/// Sends gradients to the device, in pieces of at most piece_values values when they are
/// more (in order: the device sets them once the last is there); answers with their step
/// once the device took all, or with the first error.
caf::result<int64_t> send_in_pieces(self_ptr self, const gradient_values& g) {
  const size_t piece = self->state.piece_values;
  if (g.values.size() <= piece)
    return self->delegate(self->state.device, g);
  auto promise = self->make_response_promise<int64_t>();
  const int64_t step = g.step;
  auto all = make_fan_in<int64_t>(
      (g.values.size() + piece - 1) / piece,
      [promise, step](std::vector<int64_t>&) mutable { promise.deliver(step); },
      [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  for (size_t at = 0, k = 0; at < g.values.size(); at += piece, ++k) {
    const auto end = std::min(g.values.size(), at + piece);
    gradient_values part{.step = step,
                         .values =
                             std::vector<float>(g.values.begin() + static_cast<ptrdiff_t>(at),
                                                g.values.begin() + static_cast<ptrdiff_t>(end)),
                         .offset = static_cast<int64_t>(at)};
    self->request(self->state.device, caf::infinite, std::move(part))
        .then(all->answer(k), all->failure());
  }
  return promise;
}

/// Answers `loss` at once, except in shaped wall time before the op's work and answer would
/// have crossed the emulated link. The work was sent at `sent_s` and the device computed
/// for `compute_s` (runtime::apart_answer_s). An answer whose time has passed goes at once.
void answer_when_due(self_ptr self, caf::typed_response_promise<double> promise, double loss,
                     double sent_s, double compute_s) {
  auto& st = self->state;
  if (!st.shaped) {
    promise.deliver(loss);
    return;
  }
  const double now = st.shaped->job->real_now_s();
  const double wait = runtime::apart_answer_s(st.shaped->link, sent_s, now, compute_s) - now;
  if (wait <= 0) {
    promise.deliver(loss);
    return;
  }
  const uint64_t id = st.next_held++;
  st.held.emplace(id, std::make_pair(std::move(promise), loss));
  self->delayed_send(self, wait_of(wait), release_atom_v, id);
}

} // namespace

device_rows rows_of(const device_work& work, bool first, bool last, int context) {
  device_rows r;
  r.kind = work.kind;
  r.micro_batch = work.micro;
  r.first_sample = work.first_sample;
  r.samples = work.samples;
  r.loss_scale = work.loss_scale;
  r.recompute = work.recompute;
  if (static_cast<runtime::op_kind>(work.kind) == runtime::op_kind::forward && work.batch) {
    const auto at = static_cast<size_t>(int64_t{work.first_sample} * context);
    const auto n = static_cast<size_t>(int64_t{work.samples} * context);
    const auto slice = [&](const std::vector<int32_t>& v) {
      if (at + n > v.size())
        throw std::invalid_argument("samples [" + std::to_string(work.first_sample) + ", " +
                                    std::to_string(work.first_sample + work.samples) +
                                    ") outside the step's batch");
      return std::vector<int32_t>(v.begin() + static_cast<ptrdiff_t>(at),
                                  v.begin() + static_cast<ptrdiff_t>(at + n));
    };
    if (first)
      r.tokens = slice(work.batch->tokens);
    if (last)
      r.targets = slice(work.batch->targets);
  }
  r.input.assign(work.input.begin(), work.input.end());
  r.output_values = static_cast<int64_t>(work.output.size());
  return r;
}

namespace {

/// Sends `work` to the device as rows of its own, and writes the rows it answers into the
/// stage's message. In shaped wall time the answer waits for its modelled round trip.
caf::result<double> run_apart(self_ptr self, const device_work& work) {
  auto& s = self->state;
  device_rows rows;
  try {
    rows = rows_of(work, s.first, s.last, s.context);
  } catch (const std::exception& e) {
    return failure(self, e.what());
  }
  // Sent anyway, a message too large would be dropped by the encoder, the step waiting.
  for (const auto values : {work.input.size(), work.output.size()})
    if (static_cast<int64_t>(values * sizeof(float)) > messages::max_payload_bytes)
      return failure(self, "rows of " + std::to_string(values) +
                               " values are more than one message carries");
  auto promise = self->make_response_promise<double>();
  const double sent_s = s.shaped ? s.shaped->job->real_now_s() : 0.0;
  self->request(s.device, caf::infinite, std::move(rows))
      .then(
          [self, promise, work, sent_s](device_output& out) mutable {
            if (out.output.size() != work.output.size()) {
              promise.deliver(failure(self, "answered " + std::to_string(out.output.size()) +
                                                " values, expected " +
                                                std::to_string(work.output.size())));
              return;
            }
            // `work` (captured) keeps the message these rows are written into alive.
            std::copy(out.output.begin(), out.output.end(), work.output.begin());
            answer_when_due(self, promise, out.loss, sent_s, out.compute_s);
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

} // namespace

device_actor::behavior_type
remote_device_behavior(self_ptr self, device_actor device, std::string where, bool first, bool last,
                       int context, size_t piece_values,
                       std::shared_ptr<const shaped_round_trip> shaped) {
  auto& st = self->state;
  st.shaped = std::move(shaped);
  st.piece_values = std::max<size_t>(piece_values, 1);
  st.device = std::move(device);
  st.where = std::move(where);
  st.first = first;
  st.last = last;
  st.context = context;
  const auto not_here = [self](const char* what) {
    return failure(self, std::string(what) + " of a device on another node");
  };
  return {
      [self](const device_work& work) -> caf::result<double> { return run_apart(self, work); },
      [self](const device_rows& rows) -> caf::result<device_output> {
        return self->delegate(self->state.device, rows);
      },
      [self](ring_atom a, caf::strong_actor_ptr next, int32_t rank, int32_t size, bool hold) {
        self->send(self->state.device, a, std::move(next), rank, size, hold);
      },
      [](release_atom) {}, // the device itself holds what it receives
      [self](release_atom, uint64_t id) {
        auto& held = self->state.held;
        if (auto it = held.find(id); it != held.end()) {
          it->second.first.deliver(it->second.second);
          held.erase(it);
        }
      },
      [self](reduce_atom a, int64_t step, bool answer_sums) -> caf::result<gradient_values> {
        return self->delegate(self->state.device, a, step, answer_sums);
      },
      [self](squares_atom a) -> caf::result<double> {
        return self->delegate(self->state.device, a);
      },
      [self](ring_chunk& c) { self->send(self->state.device, std::move(c)); },
      [not_here](buffers_atom) -> caf::result<device_buffers> { return not_here("GPU buffers"); },
      [not_here](gradients_atom) -> caf::result<std::vector<float>> {
        return not_here("host gradients");
      },
      [self](const gradient_values& g) -> caf::result<int64_t> { return send_in_pieces(self, g); },
      [self](const optimize_order& order) -> caf::result<int64_t> {
        return self->delegate(self->state.device, order);
      },
      [not_here](snapshot_atom) -> caf::result<std::vector<kernels::parameter_state>> {
        return not_here("a snapshot (its digest is compared)");
      },
      [self](digest_atom a) -> caf::result<uint64_t> {
        return self->delegate(self->state.device, a);
      },
      [self](restore_atom a, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        if (auto why = too_large_to_send(snapshot); !why.empty())
          return failure(self, why);
        return self->delegate(self->state.device, a, snapshot);
      },
  };
}

} // namespace deepcee::actors
