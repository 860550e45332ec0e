#include "actors/stage/stage_checkpoint.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include "actors/stage/stage_reduce.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <stdexcept>
#include <string>

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

caf::result<stage_snapshot> answer_snapshot(stage_self self) {
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
                promise.deliver(
                    make_error(messages::error_code::internal, where(self->state) + ": " + why));
                return;
              }
            promise.deliver(std::move(snapshot));
          },
          [=](caf::error& e) mutable { promise.deliver(std::move(e)); });
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
          [=](int64_t step) mutable {
            self->state.step = step;
            promise.deliver(step);
          },
          [=](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

} // namespace deepcee::actors
