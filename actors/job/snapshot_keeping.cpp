#include "actors/job/snapshot_keeping.hpp"

#include "actors/protocol/errors.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/sim/simulator.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::actors {

namespace {

double one_step_s(const runtime::virtual_cluster& vc, const runtime::plan& p) {
  runtime::sim_options one;
  one.steps = 1;
  return runtime::simulate(vc.hardware(), vc.model(), vc.profile(), p, {}, one).step_time_s;
}

/// Every how many steps the layout's snapshots go out: the job file's, or the fewest steps
/// over which the send costs at most 5% of the step time. Logs the decision.
int interval_of(const coordinator_state& st) {
  const auto& vc = *st.cluster;
  const auto cost = runtime::snapshot_send(vc.hardware(), vc.model(), st.plan, st.snapshot_layout,
                                           st.script, st.clock_s);
  const double step_s = one_step_s(vc, st.plan);
  const int set = st.job->mode.snapshot_every;
  const int every = runtime::snapshot_every(set, cost, step_s);
  if (every == 0) {
    spdlog::warn("snapshots: {} live on one node only, and snapshot_every = 0 keeps no "
                 "snapshot: losing that node stops the job",
                 runtime::layer_ranges(st.snapshot_layout.single_node_layers));
    return 0;
  }
  spdlog::info("snapshots: {} live on one node only; pipeline 0's {} stage(s) snapshot every {} "
               "step(s) to a stage on another node ({}): {:.4g} MB, {:.4g} s over the slowest "
               "link against a step of {:.4g} s",
               runtime::layer_ranges(st.snapshot_layout.single_node_layers),
               st.snapshot_layout.stages.size(), every,
               set >= 0 ? "set by snapshot_every" : "at most 5% of the step time", cost.bytes / 1e6,
               cost.seconds, step_s);
  return every;
}

/// "step 5" or "steps 5-7".
std::string steps_text(int64_t first, int64_t last) {
  return first == last ? fmt::format("step {}", first) : fmt::format("steps {}-{}", first, last);
}

int flat_of(const coordinator_state& st, int32_t pipeline, int32_t stage) {
  if (pipeline < 0 || pipeline >= static_cast<int>(st.plan.pipelines.size()) || stage < 0 ||
      stage >= static_cast<int>(st.plan.pipelines[size_t(pipeline)].stages.size()))
    return -1;
  return st.job->flat_index(pipeline, stage);
}

/// The replayed step `k` ended (`r`): the next one runs, or `r` is the step owed.
void replayed(coordinator_self self, int64_t k, step_result& r);

void replay_step(coordinator_self self, int64_t k) {
  self->request(caf::actor_cast<coordinator_actor>(self), caf::infinite, step_atom_v, k)
      .then([self, k](step_result& r) { replayed(self, k, r); },
            [self](caf::error& e) {
              auto answer = self->state.rollback->answer;
              self->state.rollback.reset();
              answer.deliver(std::move(e));
            });
}

void replayed(coordinator_self self, int64_t k, step_result& r) {
  auto& rb = *self->state.rollback;
  if (k < rb.target) {
    rb.losses.push_back(r.loss);
    replay_step(self, k + 1);
    return;
  }
  r.replayed = std::move(rb.losses);
  auto spans = std::move(rb.finish);
  const auto replayed = rb.target - 1 > rb.snapshot
                            ? steps_text(rb.snapshot + 1, rb.target - 1) + " replayed, then "
                            : std::string();
  spans.push_back({.name = fmt::format("rollback: from the snapshot of step {}, {}step {} again",
                                       rb.snapshot, replayed, rb.target),
                   .device = -1,
                   .start_s = rb.since_s,
                   .end_s = r.start_s});
  r.finish.insert(r.finish.begin(), spans.begin(), spans.end());
  auto answer = rb.answer;
  self->state.rollback.reset();
  answer.deliver(std::move(r));
}

} // namespace

void plan_job_snapshots(coordinator_state& st) {
  st.snapshot_layout = st.job->dry() ? runtime::snapshot_layout{}
                                     : runtime::plan_snapshots(st.cluster->hardware(), st.plan,
                                                               st.job->layout.stage_node);
  st.snapshots = runtime::snapshot_ledger(st.snapshot_layout.stages.size());
  st.snapshot_every = 0;
  if (st.snapshot_layout.needed())
    st.snapshot_every = interval_of(st);
  else if (!st.snapshot_layout.single_node_layers.empty() && !st.job->dry())
    spdlog::warn("snapshots: {} live on one node only, and no other node runs a stage to keep "
                 "a snapshot: losing that node stops the job",
                 runtime::layer_ranges(st.snapshot_layout.single_node_layers));
}

void order_snapshots(coordinator_self self, int64_t step) {
  auto& st = self->state;
  if (st.snapshot_every <= 0 || step % st.snapshot_every != 0)
    return;
  const auto& l = st.snapshot_layout;
  for (size_t i = 0; i < l.stages.size(); ++i) {
    const auto keeper = caf::actor_cast<caf::strong_actor_ptr>(st.stages.at(size_t(l.keepers[i])));
    self->send(st.stages.at(size_t(l.stages[i])), keep_atom_v, step, keeper);
  }
}

void on_kept(coordinator_self self, int64_t step, int32_t pipeline, int32_t stage) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  if (sender && std::none_of(st.stages.begin(), st.stages.end(), [&](const stage_actor& s) {
        return s->address() == sender->address();
      }))
    return; // a keeper of a plan a re-plan replaced
  const int flat = flat_of(st, pipeline, stage);
  const auto& stages = st.snapshot_layout.stages;
  const auto it = std::find(stages.begin(), stages.end(), flat);
  if (it == stages.end())
    return;
  const auto before = st.snapshots.complete();
  st.snapshots.kept(step, static_cast<size_t>(it - stages.begin()));
  if (st.snapshots.complete() != before)
    spdlog::debug("snapshots: the snapshot of step {} is complete", step);
}

rollback_check can_roll_back(const coordinator_state& st, const std::vector<int>& lost_stages) {
  if (st.snapshot_layout.single_node_layers.empty() || st.job->dry())
    return {std::nullopt, ""};
  if (!st.snapshot_layout.needed())
    return {std::nullopt, "no other node ran a stage to keep a snapshot"};
  if (st.snapshot_every <= 0)
    return {std::nullopt, "snapshots are off: snapshot_every = 0"};
  const auto step = st.snapshots.complete();
  if (!step)
    return {std::nullopt, "no snapshot was complete yet"};
  const auto sources = runtime::snapshot_sources(st.plan, st.snapshot_layout, lost_stages);
  if (!sources.lost_layers.empty())
    return {std::nullopt, "the snapshot of " + runtime::layer_ranges(sources.lost_layers) +
                              " was lost with its stage's keeper"};
  return {step, ""};
}

rollback_moves rollback_sources_for(const coordinator_state& st, const runtime::plan& next) {
  const auto held = runtime::surviving_holders(st.cluster->hardware(), st.plan, st.lost_nodes,
                                               st.job->layout.stage_node);
  auto sources = runtime::snapshot_sources(st.plan, st.snapshot_layout, held.lost_stages);
  if (!sources.lost_layers.empty())
    throw std::runtime_error("no kept snapshot holds " +
                             runtime::layer_ranges(sources.lost_layers));
  return {runtime::sources_by_stage(next, sources.layer_source), std::move(sources.holders)};
}

void replay_from_snapshot(coordinator_self self, int64_t step, int64_t snapshot, double since_s) {
  auto& st = self->state;
  if (!st.pending || st.result.step != step)
    return; // the step failed while the layers moved
  // A rollback during a rollback's replay owes the first answer, for the later step.
  auto run = st.rollback ? std::move(*st.rollback) : coordinator_state::rollback_run{};
  if (!st.rollback) {
    run.answer = *st.pending;
    run.target = step;
    run.since_s = since_s;
  }
  run.snapshot = snapshot;
  run.losses.clear();
  run.finish.insert(run.finish.end(), st.result.finish.begin(), st.result.finish.end());
  st.rollback = std::move(run);
  st.pending.reset(); // a replayed step's own request is never answered: the first one is
  st.phase = coordinator_phase::idle;
  spdlog::warn("rollback: the job goes back to the snapshot of step {}; {} run again with the "
               "same samples",
               snapshot, steps_text(snapshot + 1, st.rollback->target));
  replay_step(self, snapshot + 1);
}

} // namespace deepcee::actors
