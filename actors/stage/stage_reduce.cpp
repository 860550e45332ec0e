#include "actors/stage/stage_reduce.hpp"

#include "actors/protocol/errors.hpp"
#include "runtime/step/gradient_exchange.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::actors {

namespace {

runtime::layer_range layers_of(const stage_state& st) {
  return {st.first_layer, st.last_layer};
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

/// The stage's step is done: its report goes to the coordinator.
void report_step(stage_self self, double grad_sum_squares) {
  auto& st = self->state;
  st.phase = stage_phase::idle;
  st.own_gradients.clear();
  // Shaped wall time: the report crosses the emulated link to the coordinator's node
  // (control messages, runtime/sim/simulator.hpp).
  const double now = st.job->real_now_s();
  const double wait = st.job->shaping() ? st.costs.control_latency(now) : 0;
  if (wait > 0)
    self->delayed_send(st.coordinator, wait_of(wait), report_of(st, grad_sum_squares));
  else
    self->send(st.coordinator, report_of(st, grad_sum_squares));
}

/// Sends this stage's gradient sums (over its devices) to the other holders of its layers.
void send_shares(stage_self self) {
  auto& st = self->state;
  for (const auto& slice : runtime::share_slices(st.job->plan, st.pipeline, layers_of(st))) {
    gradient_share share;
    share.step = st.step;
    share.pipeline = st.pipeline;
    share.stage = st.stage;
    share.first_layer = slice.layers.first;
    share.last_layer = slice.layers.last;
    const auto b = st.own_gradients.begin();
    share.values.assign(b + static_cast<ptrdiff_t>(slice.begin),
                        b + static_cast<ptrdiff_t>(slice.end));
    const int k = st.job->flat_index(slice.pipeline, slice.stage);
    const auto& peer = st.peers.at(static_cast<size_t>(k));
    // Dropped on the way, a share too large for one message would leave the step waiting.
    if (peer->node() != self->node() && share.values.size() > messages::max_payload_floats)
      throw std::runtime_error("the gradients of layers [" + std::to_string(slice.layers.first) +
                               ", " + std::to_string(slice.layers.last) + ") for " +
                               st.job->stage_name(k) + " are " +
                               std::to_string(share.values.size()) +
                               " values, more than one message between nodes carries");
    const auto part = st.costs.share_parts.find(k);
    if (st.job->shaping() && part != st.costs.share_parts.end()) {
      // Shaped wall time: the share takes this process's link FIFOs as a transfer from
      // this stage's first device to the peer's: it leaves at once for the peer to hold
      // until it arrives, or else when it arrives.
      auto timed = part->second;
      timed.bytes = static_cast<double>(share.values.size() * sizeof(float));
      const double now = st.job->real_now_s();
      const double arrival = st.job->shaped.send(timed, now).arrival_s;
      if (held_by_receiver(self, k)) {
        share.deliver_at_ns = st.job->steady_ns_at(arrival);
        self->send(peer, std::move(share));
        continue;
      }
      self->delayed_send(peer, wait_of(arrival - now), std::move(share));
    } else {
      self->send(peer, std::move(share));
    }
  }
}

} // namespace

std::string where(const stage_state& st) {
  return "pipeline " + std::to_string(st.pipeline) + " stage " + std::to_string(st.stage);
}

void report_error(stage_self self, const std::string& what, messages::error_code code) {
  auto& st = self->state;
  st.phase = stage_phase::idle;
  st.op_running = false;
  stage_report r;
  r.step = st.step;
  r.pipeline = st.pipeline;
  r.stage = st.stage;
  r.error = where(st) + ": " + what;
  r.code = code;
  if (st.coordinator)
    self->send(st.coordinator, std::move(r));
}

std::string check_share(const stage_state& st, const gradient_share& share) {
  if (!st.group)
    return "gradient share in dry mode, where no stage has gradients";
  return runtime::share_refusal(
      st.job->plan, st.pipeline, st.step, layers_of(st),
      {share.step, share.pipeline, {share.first_layer, share.last_layer}, share.values.size()});
}

group_failure::group_failure(stage_self self) : self_(self), epoch_(self->state.epoch) {}

void group_failure::operator()(caf::error& e) const {
  if (self_->state.epoch == epoch_)
    report_error(self_, reason_text(self_->system(), e),
                 code_of(e).value_or(messages::error_code::internal));
}

void try_reduce(stage_self self) {
  auto& st = self->state;
  if (st.phase != stage_phase::reducing || st.own_gradients.empty())
    return;
  const int pipelines = static_cast<int>(st.job->plan.pipelines.size());
  auto& shares = st.shares[st.step];
  std::vector<runtime::layer_range> received;
  std::vector<runtime::share_values> values;
  for (const auto& s : shares) {
    received.push_back({s.first_layer, s.last_layer});
    values.push_back({s.pipeline, {s.first_layer, s.last_layer}, s.values});
  }
  if (!runtime::shares_complete(pipelines, layers_of(st), received))
    return;
  auto total = runtime::sum_over_pipelines(st.job->plan.model, pipelines, st.pipeline,
                                           layers_of(st), std::move(st.own_gradients), values);
  st.shares.erase(st.step);
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
          group_failure{self});
}

void finish_compute(stage_self self) {
  auto& st = self->state;
  if (st.job->dry()) { // no gradients: the coordinator times the all-reduce
    st.phase = stage_phase::idle;
    self->send(st.coordinator, report_of(st, 0));
    return;
  }
  st.phase = stage_phase::reducing;
  const auto epoch = st.epoch;
  if (st.job->plan.pipelines.size() == 1) { // no other holder: the sums stay on the devices
    self->request(st.group, caf::infinite, squares_atom_v, st.step)
        .then(
            [=](double sum_squares) {
              if (self->state.epoch == epoch)
                report_step(self, sum_squares);
            },
            group_failure{self});
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
          group_failure{self});
}

} // namespace deepcee::actors
