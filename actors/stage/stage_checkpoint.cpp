#include "actors/stage/stage_checkpoint.hpp"

#include "actors/device/device_worker.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/wire_format.hpp"
#include "actors/stage/stage_reduce.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::actors {

void require_weights_between_steps(const stage_state& st, const char* what) {
  if (!st.group)
    throw std::logic_error(std::string(what) + " asked of pipeline " + std::to_string(st.pipeline) +
                           " stage " + std::to_string(st.stage) +
                           " in dry mode, which has no weights");
  if (st.phase == stage_phase::computing || st.phase == stage_phase::reducing)
    throw std::logic_error(std::string(what) + " asked while step " + std::to_string(st.step) +
                           " runs on pipeline " + std::to_string(st.pipeline) + " stage " +
                           std::to_string(st.stage));
}

stage_snapshot snapshot_of(const stage_state& st, std::vector<kernels::parameter_state> params) {
  stage_snapshot s;
  s.step = st.step;
  s.pipeline = st.pipeline;
  s.stage = st.stage;
  s.params = std::move(params);
  return s;
}

namespace {

/// The stage's snapshot, or only layer `layer`'s parameters (`layer` >= 0).
caf::result<stage_snapshot> answer_snapshot_of(stage_self self, int32_t layer) {
  auto& s = self->state;
  auto promise = self->make_response_promise<stage_snapshot>();
  try {
    require_weights_between_steps(s, "a snapshot");
    if (layer >= 0 && (layer < s.first_layer || layer >= s.last_layer))
      throw std::invalid_argument("a snapshot of layer " + std::to_string(layer) +
                                  ", which the stage does not hold");
  } catch (const std::exception& e) {
    promise.deliver(make_error(messages::error_code::internal, where(s) + ": " + e.what()));
    return promise;
  }
  const auto& asker = self->current_sender();
  const bool remote = asker && asker->node() != self->node();
  const int n_layer = s.job->plan.model.n_layer;
  self->request(s.group, caf::infinite, snapshot_atom_v)
      .then(
          [self, promise, layer, n_layer,
           remote](std::vector<kernels::parameter_state>& params) mutable {
            if (layer >= 0)
              std::erase_if(params, [&](const kernels::parameter_state& p) {
                return layer_of_parameter(p.name, n_layer) != layer;
              });
            auto snapshot = snapshot_of(self->state, std::move(params));
            if (remote)
              if (auto why = too_large_to_send(snapshot); !why.empty()) {
                promise.deliver(
                    make_error(messages::error_code::internal, where(self->state) + ": " + why));
                return;
              }
            promise.deliver(std::move(snapshot));
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

} // namespace

caf::result<stage_snapshot> answer_snapshot(stage_self self) {
  return answer_snapshot_of(self, -1);
}

caf::result<stage_snapshot> answer_layer_snapshot(stage_self self, int32_t layer) {
  return answer_snapshot_of(self, layer);
}

namespace {

/// Loads `layers` (one snapshot per layer, in layer order) into the group as the stage's
/// snapshot after `step`, and answers `promise` with the bytes they carried.
void load_layers(stage_self self, int64_t step, std::vector<stage_snapshot>& layers,
                 caf::typed_response_promise<int64_t> promise) {
  stage_snapshot whole;
  whole.step = step;
  whole.pipeline = self->state.pipeline;
  whole.stage = self->state.stage;
  whole.source = "the re-plan before step " + std::to_string(step + 1);
  int64_t bytes = 0;
  for (auto& one : layers)
    for (auto& p : one.params) {
      bytes += static_cast<int64_t>(p.value.size() + p.exp_avg.size() + p.exp_avg_sq.size()) *
               static_cast<int64_t>(sizeof(float));
      whole.params.push_back(std::move(p));
    }
  self->request(self->state.group, caf::infinite, restore_atom_v, std::move(whole))
      .then(
          [self, promise, bytes](int64_t done) mutable {
            self->state.step = done;
            promise.deliver(bytes);
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
}

} // namespace

caf::result<int64_t> take_layers(stage_self self, std::vector<caf::strong_actor_ptr> sources,
                                 int64_t step, bool kept) {
  auto& s = self->state;
  const auto layers = static_cast<size_t>(s.last_layer - s.first_layer);
  if (sources.size() != layers)
    return make_error(messages::error_code::internal,
                      where(s) + ": a move names " + std::to_string(sources.size()) +
                          " sources for " + std::to_string(layers) + " layers");
  s.step = step; // the new stage continues after the old ones' last step
  if (!s.group)  // dry time: no weights anywhere; the coordinator accounts the move's time
    return int64_t{0};
  auto promise = self->make_response_promise<int64_t>();
  // One request per layer, answered peer to peer. Each message then carries one layer's
  // weights and moments, well under what one message between nodes carries.
  auto all = make_fan_in<stage_snapshot>(
      layers,
      [self, step, promise](std::vector<stage_snapshot>& parts) {
        load_layers(self, step, parts, promise);
      },
      [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  for (size_t i = 0; i < layers; ++i) {
    const auto layer = static_cast<int32_t>(s.first_layer + static_cast<int>(i));
    const auto source = caf::actor_cast<stage_actor>(sources[i]);
    if (kept)
      self->request(source, caf::infinite, snapshot_atom_v, layer, step)
          .then(all->answer(i), all->failure());
    else
      self->request(source, caf::infinite, snapshot_atom_v, layer)
          .then(all->answer(i), all->failure());
  }
  return promise;
}

caf::result<int64_t> answer_restore(stage_self self, const stage_snapshot& snapshot) {
  auto& s = self->state;
  try {
    require_weights_between_steps(s, "a restore");
  } catch (const std::exception& e) {
    return make_error(messages::error_code::internal, where(s) + ": " + e.what());
  }
  auto promise = self->make_response_promise<int64_t>();
  self->request(s.group, caf::infinite, restore_atom_v, snapshot)
      .then(
          [self, promise](int64_t step) mutable {
            self->state.step = step;
            promise.deliver(step);
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

} // namespace deepcee::actors
