#include "actors/job/job_wiring.hpp"

#include "actors/device/device_actor.hpp"
#include "actors/job/adapter_actor.hpp"
#include "actors/job/coordinator.hpp"
#include "actors/net/pipe_actor.hpp"
#include "actors/stage/stage_actor.hpp"
#include "runtime/plan/plan_allocation.hpp"

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <optional>

namespace deepcee::actors {

actor_guard::~actor_guard() {
  caf::scoped_actor self{sys_};
  for (auto& a : actors_)
    self->send_exit(caf::actor_cast<caf::actor>(a), caf::exit_reason::user_shutdown);
}

namespace {

/// The flat stages node `node` runs: all of them in one process.
std::vector<int32_t> stages_here(const job_context& job, int node) {
  if (!job.layout.empty())
    return job.layout.stages_on(node);
  std::vector<int32_t> all;
  for (int p = 0; p < static_cast<int>(job.plan.pipelines.size()); ++p)
    for (int s = 0; s < job.stage_count(p); ++s)
      all.push_back(job.flat_index(p, s));
  return all;
}

} // namespace

local_part spawn_local_part(caf::actor_system& sys, const std::shared_ptr<job_context>& job,
                            int node, actor_guard& guard) {
  return spawn_local_part(sys, job, node, [&](caf::strong_actor_ptr a) { guard.add(a); });
}

local_part spawn_local_part(caf::actor_system& sys, const std::shared_ptr<job_context>& job,
                            int node, const std::function<void(caf::strong_actor_ptr)>& keep) {
  local_part part;
  part.node = node;
  part.boot_id = job->boot_id;
  for (int32_t k : stages_here(*job, node)) {
    const auto [pipeline, stage] = job->stage_at(static_cast<size_t>(k));
    part.stages.push_back(spawn_stage(sys, job, pipeline, stage));
    keep(caf::actor_cast<caf::strong_actor_ptr>(part.stages.back()));
  }
  part.devices = spawn_devices_apart(sys, job, node);
  for (const auto& d : part.devices)
    if (d)
      keep(caf::actor_cast<caf::strong_actor_ptr>(d));
  return part;
}

stage_wiring wiring_of(const local_part& part) {
  stage_wiring wiring;
  for (const auto& s : part.stages)
    wiring.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
  return wiring;
}

stage_wiring complete_wiring(stage_wiring wiring, const coordinator_actor& coordinator,
                             const adapter_actor& adapter,
                             std::vector<caf::strong_actor_ptr> pipes) {
  wiring.coordinator = caf::actor_cast<caf::strong_actor_ptr>(coordinator);
  wiring.adapter = caf::actor_cast<caf::strong_actor_ptr>(adapter);
  wiring.pipes = std::move(pipes);
  return wiring;
}

wired_job wire_job(caf::actor_system& sys, std::shared_ptr<job_context> job, stage_wiring wiring,
                   std::chrono::milliseconds step_timeout, actor_guard& guard) {
  wired_job out;
  out.job = std::move(job);
  for (const auto& stage : wiring.stages)
    out.stages.push_back(caf::actor_cast<stage_actor>(stage));
  adapter_options adapting;
  adapting.react = out.job->mode.adapt;
  // A re-plan spawns the new plan's stages beside the coordinator, or through each node's
  // replanner across node processes.
  adapting.policy.allow_replan = out.job->layout.empty() || !wiring.replanners.empty();
  adapting.clock_error_s = wiring.clock_errors;
  adapting.replanners = wiring.replanners;
  out.adapter = spawn_adapter(sys, out.job, adapting);
  guard.add(out.adapter);
  out.coordinator =
      spawn_coordinator(sys, out.job, out.stages, out.job->stage_nodes, step_timeout,
                        wiring.devices, wiring.replanners, wiring.boot_ids, wiring.heartbeat);
  guard.add(out.coordinator);
  // Shared links' pipes live beside the coordinator; stages on every node reach them
  // through the wiring.
  out.pipes = spawn_pipes(sys, out.job, out.stages, out.coordinator, out.adapter);
  for (const auto& pipe : out.pipes)
    guard.add(pipe);
  wiring = complete_wiring(std::move(wiring), out.coordinator, out.adapter, out.pipes);
  caf::scoped_actor self{sys};
  self->send(out.adapter, wire_atom_v, wiring.coordinator);
  self->send(out.coordinator, wire_atom_v, wiring.adapter);
  for (auto& stage : out.stages)
    self->send(stage, wiring);
  return out;
}

running_job job_now(caf::actor_system& sys, const wired_job& wired,
                    std::chrono::milliseconds wait) {
  running_job out{.job = wired.job, .stages = wired.stages, .plan = wired.job->plan};
  caf::scoped_actor self{sys};
  self->request(wired.coordinator, wait, plan_atom_v)
      .receive(
          [&](job_in_force& now) {
            out.job = std::move(now.job);
            out.plan = std::move(now.plan);
            out.stages.clear();
            for (const auto& s : now.stages)
              out.stages.push_back(caf::actor_cast<stage_actor>(s));
          },
          [](caf::error&) {});
  return out;
}

caf::expected<step_result> request_step(caf::actor_system& sys,
                                        const coordinator_actor& coordinator, int64_t step,
                                        std::chrono::milliseconds wait) {
  caf::scoped_actor self{sys};
  std::optional<step_result> result;
  caf::error error;
  self->request(coordinator, wait, step_atom_v, step)
      .receive([&](step_result& r) { result = std::move(r); },
               [&](caf::error& e) { error = std::move(e); });
  if (result)
    return std::move(*result);
  return error;
}

caf::expected<int64_t> adapt_to(caf::actor_system& sys, const adapter_actor& adapter,
                                const runtime::plan& next, int64_t at_step,
                                std::chrono::milliseconds wait) {
  caf::scoped_actor self{sys};
  std::optional<int64_t> at;
  caf::error error;
  self->request(
          adapter, wait,
          replan_order{
              .plan = next, .effective_step = at_step, .job = nullptr, .bytes = 0, .move_s = 0})
      .receive([&](int64_t step) { at = step; }, [&](caf::error& e) { error = std::move(e); });
  if (at)
    return *at;
  return error;
}

std::vector<adapt_record> adapter_decisions(caf::actor_system& sys, const adapter_actor& adapter,
                                            std::chrono::milliseconds wait) {
  caf::scoped_actor self{sys};
  std::vector<adapt_record> out;
  self->request(adapter, wait, decisions_atom_v)
      .receive([&](std::vector<adapt_record>& v) { out = std::move(v); }, [](caf::error&) {});
  return out;
}

} // namespace deepcee::actors
