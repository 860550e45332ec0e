#include "actors/stage/stage_snapshots.hpp"

#include "actors/device/device_worker.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/stage/stage_checkpoint.hpp"
#include "actors/stage/stage_reduce.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

namespace {

/// "pipeline p stage s (node n)" of a snapshot's stage, as the job names it.
std::string stage_of(const stage_state& st, const stage_snapshot& snapshot) {
  const auto& plan = st.job->plan;
  if (snapshot.pipeline < 0 || snapshot.pipeline >= static_cast<int>(plan.pipelines.size()) ||
      snapshot.stage < 0 || snapshot.stage >= st.job->stage_count(snapshot.pipeline))
    return "pipeline " + std::to_string(snapshot.pipeline) + " stage " +
           std::to_string(snapshot.stage) + ", which the plan does not have";
  return st.job->stage_name(size_t(st.job->flat_index(snapshot.pipeline, snapshot.stage)));
}

/// Keeps `snapshot` among the copies of its stage, the two newest only.
void store(stage_state& st, stage_snapshot snapshot) {
  auto& copies = st.kept[{snapshot.pipeline, snapshot.stage}];
  std::erase_if(copies, [&](const stage_snapshot& s) { return s.step == snapshot.step; });
  copies.push_back(std::move(snapshot));
  std::sort(copies.begin(), copies.end(),
            [](const stage_snapshot& a, const stage_snapshot& b) { return a.step < b.step; });
  if (copies.size() > 2)
    copies.erase(copies.begin());
}

} // namespace

void take_snapshot(stage_self self, int64_t step, const caf::strong_actor_ptr& keeper) {
  auto& s = self->state;
  if (!s.group || !keeper) // dry time keeps no weights
    return;
  self->request(s.group, caf::infinite, snapshot_atom_v)
      .then(
          [self, step, keeper](std::vector<kernels::parameter_state>& params) {
            auto snapshot = snapshot_of(self->state, std::move(params));
            snapshot.step = step;
            snapshot.source =
                "the snapshot of " + where(self->state) + " after step " + std::to_string(step);
            store(self->state, snapshot);
            const auto digest = state_digest(snapshot.params);
            self->send(caf::actor_cast<stage_actor>(keeper), keep_atom_v, std::move(snapshot),
                       digest);
          },
          [self, step](caf::error& e) {
            report_error(self, "the snapshot after step " + std::to_string(step) + ": " +
                                   reason_text(self->system(), e));
          });
}

void keep_snapshot(stage_self self, stage_snapshot& snapshot, uint64_t digest) {
  auto& s = self->state;
  if (state_digest(snapshot.params) != digest) {
    spdlog::warn("{}: refused the snapshot after step {} from {}: its weights and moments do "
                 "not match their digest",
                 where(s), snapshot.step, stage_of(s, snapshot));
    return;
  }
  const auto step = snapshot.step;
  const auto pipeline = static_cast<int32_t>(snapshot.pipeline);
  const auto stage = static_cast<int32_t>(snapshot.stage);
  store(s, std::move(snapshot));
  if (s.coordinator)
    self->send(s.coordinator, kept_atom_v, step, pipeline, stage);
}

caf::result<stage_snapshot> answer_kept_layer(stage_self self, int32_t layer, int64_t step) {
  auto& s = self->state;
  const int n_layer = s.job->plan.model.n_layer;
  for (const auto& [owner, copies] : s.kept)
    for (const auto& copy : copies) {
      if (copy.step != step)
        continue;
      stage_snapshot out;
      out.step = step;
      out.pipeline = copy.pipeline;
      out.stage = copy.stage;
      out.source = copy.source;
      for (const auto& p : copy.params)
        if (layer_of_parameter(p.name, n_layer) == layer)
          out.params.push_back(p);
      if (!out.params.empty())
        return out;
    }
  return make_error(messages::error_code::internal, where(s) + ": no snapshot kept after step " +
                                                        std::to_string(step) + " holds layer " +
                                                        std::to_string(layer));
}

} // namespace deepcee::actors
