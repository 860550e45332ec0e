#include "actors/stage_checkpoint.hpp"

#include <stdexcept>
#include <string>

namespace deepcee::actors {

namespace {

void require_weights_between_steps(const stage_state& st, const char* what) {
  if (!st.group)
    throw std::logic_error(std::string(what) + " asked of pipeline " + std::to_string(st.pipeline) +
                           " stage " + std::to_string(st.stage) +
                           " in dry mode, which has no weights");
  if (st.running || !st.own_gradients.empty())
    throw std::logic_error(std::string(what) + " asked while step " + std::to_string(st.step) +
                           " runs on pipeline " + std::to_string(st.pipeline) + " stage " +
                           std::to_string(st.stage));
}

} // namespace

stage_snapshot take_snapshot(const stage_state& st) {
  require_weights_between_steps(st, "a snapshot");
  stage_snapshot s;
  s.step = st.step;
  s.pipeline = st.pipeline;
  s.stage = st.stage;
  s.params = st.group->parameter_states();
  return s;
}

void restore_snapshot(stage_state& st, const stage_snapshot& snapshot) {
  require_weights_between_steps(st, "a restore");
  st.group->load_parameter_states(snapshot.params, snapshot.source);
  st.step = snapshot.step;
}

} // namespace deepcee::actors
