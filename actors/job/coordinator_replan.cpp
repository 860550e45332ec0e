#include "actors/job/coordinator_replan.hpp"

#include "actors/job/job_wiring.hpp"
#include "actors/job/node_deployment.hpp"
#include "actors/job/snapshot_keeping.hpp"
#include "actors/net/pipe_actor.hpp"
#include "actors/protocol/fan_out.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/plan/replan_check.hpp"

#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

#include <memory>
#include <stdexcept>
#include <utility>

namespace deepcee::actors {

namespace {

using failure_fn = std::function<void(messages::error_code, std::string)>;

/// The longest a re-plan's moves keep the heartbeats from counting silence (its end is
/// told as the moves end; this bounds a lost end).
constexpr int64_t max_move_ms = 600'000;

void stop(coordinator_self self, const caf::strong_actor_ptr& a) {
  if (!a)
    return;
  self->unlink_from(caf::actor_cast<caf::actor_addr>(a));
  self->send_exit(caf::actor_cast<caf::actor>(a), caf::exit_reason::user_shutdown);
}

/// What a re-plan has made so far.
struct replan_work {
  replan_order order;
  std::shared_ptr<job_context> job;
  runtime::state_moves moves;
  std::vector<std::vector<int>> sources; ///< per new flat stage, per layer: an old flat stage
  stage_wiring wiring;                   ///< the new stages (flat) and devices apart (slots)
  std::vector<caf::strong_actor_ptr> pipes;
  std::function<void()> then;
  failure_fn failed;
  double received = 0; ///< bytes the new stages received from the old ones
  /// When the coordinator took the order: wall time logs how long the re-plan really took.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

/// Every actor the re-plan spawned stops: it failed, the old plan goes on failing the step.
void abandon(coordinator_self self, const replan_work& w, messages::error_code code,
             const std::string& why) {
  if (const auto& beats = self->state.heartbeat)
    self->send(beats, move_atom_v, int64_t{0});
  for (const auto& a : w.wiring.stages)
    stop(self, a);
  for (const auto& a : w.wiring.devices)
    stop(self, a);
  for (const auto& a : w.pipes)
    stop(self, a);
  w.failed(code, "re-plan before step " + std::to_string(w.order.effective_step) + ": " + why);
}

/// abandon with a failed request's error.
void abandon_on(coordinator_self self, const replan_work& w, const caf::error& e) {
  abandon(self, w, code_of(e).value_or(messages::error_code::internal), self->system().render(e));
}

/// The old plan's actors stop and the coordinator runs the new job from now on, watching
/// its actors on other nodes.
void switch_to(coordinator_self self, replan_work& w) {
  auto& st = self->state;
  for (auto& old : st.stages)
    stop(self, caf::actor_cast<caf::strong_actor_ptr>(old));
  for (auto& old : st.devices_apart)
    stop(self, old);
  for (auto& old : st.replanned_pipes)
    stop(self, old);
  st.job = w.job;
  st.plan = w.job->plan;
  st.cluster = w.job->cluster;
  st.stages.clear();
  for (const auto& s : w.wiring.stages)
    st.stages.push_back(caf::actor_cast<stage_actor>(s));
  st.devices_apart = w.wiring.devices;
  st.replanned_pipes = w.pipes;
  st.reports.assign(st.stages.size(), std::nullopt);
  watch_remote_actors(self, st.job->stage_nodes);
  plan_job_snapshots(st); // the old stages' copies went with them
}

/// Every new stage has its layers: the switch, the clock, the log and the adapter.
void moved(coordinator_self self, const std::shared_ptr<replan_work>& w) {
  auto& st = self->state;
  if (st.heartbeat)
    self->send(st.heartbeat, move_atom_v, int64_t{0});
  const std::string from = stages_of(st.plan), to = stages_of(w->order.plan);
  switch_to(self, *w);
  const double before = st.clock_s;
  if (!w->job->wall())
    st.clock_s += w->moves.seconds;
  st.result.finish.push_back({.name = fmt::format("re-plan: {} -> {}, {:.4g} MB over links", from,
                                                  to, w->moves.bytes / 1e6),
                              .device = -1,
                              .start_s = before,
                              .end_s = st.clock_s});
  // In wall time, beside the move's price, the seconds the whole re-plan really took (the
  // new stages spawned and wired, then the moves).
  const auto took =
      w->job->wall()
          ? fmt::format(" (took {:.4g} s)",
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - w->started)
                            .count())
          : std::string();
  spdlog::info("re-plan before step {}: {} -> {}; {:.0f} bytes over the cluster's links, {:.0f} "
               "bytes between stage actors, {:.4g} s{}",
               w->order.effective_step, from, to, w->moves.bytes, w->received, w->moves.seconds,
               took);
  auto notice = w->order;
  notice.job = w->job;
  notice.bytes = w->moves.bytes;
  notice.move_s = w->moves.seconds;
  if (st.adapter)
    self->send(st.adapter, move_atom_v, std::move(notice));
  w->then();
}

/// The new stages are spawned everywhere: they get the wiring, then take their layers from
/// the old stages, peer to peer.
void wire_and_move(coordinator_self self, const std::shared_ptr<replan_work>& w) {
  auto& st = self->state;
  std::vector<stage_actor> stages;
  for (const auto& s : w->wiring.stages)
    stages.push_back(caf::actor_cast<stage_actor>(s));
  try {
    w->pipes = spawn_pipes(self->system(), w->job, stages, self, st.adapter);
  } catch (const std::exception& e) {
    abandon(self, *w, messages::error_code::internal, e.what());
    return;
  }
  for (const auto& p : w->pipes)
    self->link_to(caf::actor_cast<caf::actor_addr>(p));
  auto wiring = w->wiring;
  wiring.replanners = st.replanners;
  wiring.boot_ids = st.boot_ids;
  wiring = complete_wiring(std::move(wiring), self, st.adapter, w->pipes);
  for (auto& stage : stages)
    self->send(stage, wiring);
  auto all = make_fan_in<int64_t>(
      stages.size(),
      [self, w](std::vector<int64_t>& bytes) {
        for (const auto b : bytes)
          w->received += static_cast<double>(b);
        moved(self, w);
      },
      [self, w](caf::error& e) { abandon_on(self, *w, e); });
  for (size_t k = 0; k < stages.size(); ++k) {
    layer_holders holders;
    holders.step = w->order.effective_step - 1;
    if (w->order.from_snapshot >= 0) { // a rollback: every layer from a kept copy
      holders.step = w->order.from_snapshot;
      holders.kept = true;
    }
    for (int old : w->sources.at(k))
      holders.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(st.stages.at(size_t(old))));
    self->request(stages[k], caf::infinite, move_atom_v, std::move(holders))
        .then(all->answer(k), all->failure());
  }
  all->finish_if_empty();
}

/// Puts node `n`'s part of the new plan in its places in `w`'s wiring; false when the node
/// spawned other stages or devices than the plan gives it.
bool place_part(replan_work& w, int n, stage_wiring& part) {
  const auto& layout = w.job->layout;
  const auto stages = layout.stages_on(n);
  const auto slots = layout.apart_on(n);
  if (part.stages.size() != stages.size() || part.devices.size() != slots.size())
    return false;
  for (size_t i = 0; i < stages.size(); ++i)
    w.wiring.stages[size_t(stages[i])] = std::move(part.stages[i]);
  for (size_t i = 0; i < slots.size(); ++i)
    w.wiring.devices[size_t(slots[i])] = std::move(part.devices[i]);
  return true;
}

/// Across node processes: each node's replanner spawns its part from the new deployment.
/// The heartbeats stop counting silence until the moves end (moved, abandon): the moves
/// share their connections.
void spawn_on_nodes(coordinator_self self, const std::shared_ptr<replan_work>& w) {
  auto& st = self->state;
  if (st.heartbeat)
    self->send(st.heartbeat, move_atom_v, max_move_ms);
  const auto& layout = w->job->layout;
  w->wiring.stages.resize(layout.stage_node.size());
  w->wiring.devices.resize(layout.slot_node.size());
  std::vector<int> nodes;
  for (int n = 0; n < static_cast<int>(w->job->node_names.size()); ++n)
    if (layout.runs_on(n))
      nodes.push_back(n);
  // Each part takes its places as it comes, so that a failure stops what has come so far.
  auto all = make_fan_in<bool>(
      nodes.size(), [self, w](std::vector<bool>&) { wire_and_move(self, w); },
      [self, w](caf::error& e) { abandon_on(self, *w, e); });
  for (size_t k = 0; k < nodes.size(); ++k) {
    const int n = nodes[k];
    auto d = make_deployment("re-plan", w->job->plan, w->job->train, w->job->mode);
    d.node = w->job->node_names.at(static_cast<size_t>(n));
    const auto replanner =
        caf::actor_cast<node_replanner_actor>(st.replanners.at(static_cast<size_t>(n)));
    self->request(replanner, caf::infinite, std::move(d))
        .then(
            [w, n, k, all](stage_wiring& part) {
              if (!place_part(*w, n, part)) {
                auto e = make_error(messages::error_code::internal,
                                    "node " + w->job->node_names[size_t(n)] +
                                        " spawned other stages than the plan gives it");
                all->failure()(e);
                return;
              }
              bool placed = true;
              all->answer(k)(placed);
            },
            all->failure());
  }
  all->finish_if_empty();
}

} // namespace

std::string stages_of(const runtime::plan& p) {
  std::string out = std::to_string(p.pipelines.size()) + " pipeline(s):";
  for (size_t q = 0; q < p.pipelines.size(); ++q) {
    out += q == 0 ? " [" : ", [";
    const auto& stages = p.pipelines[q].stages;
    for (size_t s = 0; s < stages.size(); ++s)
      out += (s == 0 ? "" : " | ") + std::to_string(stages[s].first_layer) + "-" +
             std::to_string(stages[s].last_layer);
    out += "]";
  }
  return out;
}

void check_replan(const job_context& job, const runtime::plan& next,
                  const std::vector<caf::strong_actor_ptr>& replanners) {
  std::vector<bool> can_spawn;
  for (const auto& r : replanners)
    can_spawn.push_back(r != nullptr);
  runtime::check_replan(job.plan, job.layout, job.cluster->hardware(), next, can_spawn);
}

std::shared_ptr<job_context> replanned_context(const job_context& job, const runtime::plan& next,
                                               const runtime::link_timeline& script) {
  auto out = std::make_shared<job_context>(job);
  out->plan = next;
  out->cluster = job.cluster->with_plan(next, script);
  if (!job.layout.empty())
    out->place_on_nodes(job.cluster->hardware());
  return out;
}

void replan_then(coordinator_self self, replan_order order, std::function<void()> then,
                 std::function<void(messages::error_code, std::string)> failed) {
  auto& st = self->state;
  auto w = std::make_shared<replan_work>();
  w->order = std::move(order);
  w->then = std::move(then);
  w->failed = std::move(failed);
  try {
    check_replan(*st.job, w->order.plan, st.replanners);
    const auto& vc = *st.cluster;
    // Layers come only from stages on nodes the job has not lost; a rollback's, from the
    // copies of its snapshot (snapshot_keeping.hpp).
    if (w->order.from_snapshot >= 0) {
      auto back = rollback_sources_for(st, w->order.plan);
      w->moves = runtime::plan_state_moves(vc.hardware(), vc.model(), back.holders, w->order.plan,
                                           st.script, st.clock_s);
      w->sources = std::move(back.sources);
    } else {
      const auto from = runtime::surviving_holders(vc.hardware(), st.plan, st.lost_nodes,
                                                   st.job->layout.stage_node)
                            .holders;
      // Real links: the adapter's estimates are all that is known of them. Elsewhere the
      // script in force is the network itself.
      const bool real = st.job->wall() && !st.job->shaping() && w->order.moves_on;
      w->moves =
          real ? runtime::plan_state_moves(*w->order.moves_on, vc.model(), from, w->order.plan)
               : runtime::plan_state_moves(vc.hardware(), vc.model(), from, w->order.plan,
                                           st.script, st.clock_s);
      w->sources = runtime::layer_sources(from, w->order.plan, w->moves);
    }
    w->job = replanned_context(*st.job, w->order.plan, st.script);
    if (!w->job->layout.empty()) {
      spawn_on_nodes(self, w);
      return;
    }
    // One process: the new stages are spawned here, linked to the coordinator.
    const auto part = spawn_local_part(self->system(), w->job, 0, [&](caf::strong_actor_ptr a) {
      self->link_to(caf::actor_cast<caf::actor_addr>(a));
    });
    w->wiring = wiring_of(part);
  } catch (const std::exception& e) {
    abandon(self, *w, messages::error_code::bad_input, e.what());
    return;
  }
  wire_and_move(self, w);
}

} // namespace deepcee::actors
