#include "actors/stage/stage_checkpoint.hpp"

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

} // namespace deepcee::actors
