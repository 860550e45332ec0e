#include "actors/net/pipe_actor.hpp"
#include "actors/protocol/wire_format.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <stdexcept>
#include <string>

namespace deepcee::actors {

namespace {

using self_ptr = pipe_actor::stateful_pointer<pipe_state>;

/// The sender's flat index, after checking that it is a stage of the job.
int sender_of(const pipe_state& st, int pipeline, int stage) {
  const auto& plan = st.job->plan;
  if (pipeline < 0 || pipeline >= static_cast<int>(plan.pipelines.size()) || stage < 0 ||
      stage >= st.job->stage_count(pipeline))
    throw std::invalid_argument("pipe of link " + std::to_string(st.link.link) + ": no stage " +
                                std::to_string(stage) + " in pipeline " + std::to_string(pipeline));
  return st.job->flat_index(pipeline, stage);
}

const runtime::transfer_part& part_of(const pipe_state& st, const pipe_request& r) {
  const auto* allocation = st.allocations.in_force_at(r.step);
  const auto& cluster = allocation ? **allocation : *st.job->cluster;
  const auto& costs = cluster.stage(r.pipeline, r.stage);
  const bool forward = r.role == static_cast<int32_t>(tensor_role::activation);
  const auto& parts = forward ? costs.act_parts : costs.grad_parts;
  if (r.part < 0 || r.part >= static_cast<int>(parts.size()) ||
      parts[static_cast<size_t>(r.part)].link != st.link.link)
    throw std::invalid_argument("pipeline " + std::to_string(r.pipeline) + " stage " +
                                std::to_string(r.stage) + " sent part " + std::to_string(r.part) +
                                " to the pipe of link " + std::to_string(st.link.link) +
                                ", which it does not cross");
  return parts[static_cast<size_t>(r.part)];
}

/// Rebuilds the emulated cluster of the allocation that starts at `step` from the plan and
/// the script in force then.
void rebuild(pipe_state& s, int64_t step) {
  const auto& plan = s.plans.in_force_at(step, s.job->plan);
  const auto& script = s.scripts.in_force_at(step, s.job->cluster->timeline());
  s.allocations.put(step, s.job->cluster->with_plan(plan, script));
}

/// Commits every transfer that no sender can precede any more, in the link's order.
void commit_ready(self_ptr self) {
  auto& st = self->state;
  while (auto t = st.order->next()) {
    const auto r = st.queued.at(t->id);
    st.queued.erase(t->id);
    const auto& part = part_of(st, r);
    const auto times = st.fifo.send(part, r.send_time);
    const bool forward = r.role == static_cast<int32_t>(tensor_role::activation);
    const int to = st.job->flat_index(r.pipeline, forward ? r.stage + 1 : r.stage - 1);
    self->send(st.stages.at(static_cast<size_t>(to)),
               pipe_arrival{.step = r.step,
                            .role = r.role,
                            .pipeline = r.pipeline,
                            .stage = r.stage,
                            .micro_batch = r.micro_batch,
                            .arrival_time = times.arrival_s});
    if (st.adapter) {
      link_sample s;
      s.step = r.step;
      s.kind = static_cast<messages::tensor_kind>(r.role);
      s.micro_batch = r.micro_batch;
      s.pipeline = r.pipeline;
      s.stage = r.stage;
      s.from = part.from;
      s.to = part.to;
      s.link = part.link;
      s.bytes = part.bytes;
      s.send_time = r.send_time;
      s.start = times.start_s;
      s.drained = times.drained_s;
      s.end = times.arrival_s;
      self->send(st.adapter, s);
    }
  }
}

/// A failure is the sending stage's: the coordinator fails the step naming it.
void report(self_ptr self, int64_t step, int pipeline, int stage, const std::string& what) {
  stage_report r;
  r.step = step;
  r.pipeline = pipeline;
  r.stage = stage;
  r.error = "pipe of link " + std::to_string(self->state.link.link) + ": " + what;
  if (self->state.coordinator)
    self->send(self->state.coordinator, std::move(r));
}

pipe_actor::behavior_type pipe_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                        runtime::shared_link link, std::vector<stage_actor> stages,
                                        coordinator_actor coordinator, adapter_actor adapter) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.job = std::move(job);
  st.order = std::make_unique<runtime::pipe_order>(link.senders);
  st.link = std::move(link);
  st.stages = std::move(stages);
  st.coordinator = std::move(coordinator);
  st.adapter = std::move(adapter);
  return {
      [self](const pipe_request& r) {
        try {
          auto& s = self->state;
          const int sender = sender_of(s, r.pipeline, r.stage);
          part_of(s, r); // refuses a part that does not cross this link
          const uint64_t id = s.next_id++;
          s.order->submit(sender, {r.step, r.send_time}, id);
          s.queued.emplace(id, r);
          commit_ready(self);
        } catch (const std::exception& e) {
          report(self, r.step, r.pipeline, r.stage, e.what());
        }
      },
      [self](const messages::rebalance& r) {
        auto& s = self->state;
        if (s.plans.entries().contains(r.effective_step))
          return; // another sender's copy
        try {
          s.plans.put(r.effective_step, s.job->plan_after(r));
          rebuild(s, r.effective_step);
        } catch (const std::exception& e) {
          report(self, r.effective_step, 0, 0, e.what());
        }
      },
      [self](const script_update& u) {
        auto& s = self->state;
        if (s.scripts.entries().contains(u.step))
          return; // another sender's copy
        try {
          runtime::check_fits(u.script, s.job->cluster->hardware());
          s.scripts.put(u.step, u.script);
          rebuild(s, u.step);
        } catch (const std::exception& e) {
          report(self, u.step, 0, 0, e.what());
        }
      },
      [self](const send_horizon& h) {
        try {
          auto& s = self->state;
          s.order->promise(sender_of(s, h.pipeline, h.stage), {h.step, h.time});
          commit_ready(self);
        } catch (const std::exception& e) {
          report(self, h.step, h.pipeline, h.stage, e.what());
        }
      },
  };
}

} // namespace

pipe_actor spawn_pipe(caf::actor_system& sys, std::shared_ptr<job_context> job,
                      runtime::shared_link link, std::vector<stage_actor> stages,
                      coordinator_actor coordinator, adapter_actor adapter) {
  return sys.spawn(pipe_behavior, std::move(job), std::move(link), std::move(stages),
                   std::move(coordinator), std::move(adapter));
}

std::vector<caf::strong_actor_ptr> spawn_pipes(caf::actor_system& sys,
                                               std::shared_ptr<job_context> job,
                                               const std::vector<stage_actor>& stages,
                                               const coordinator_actor& coordinator,
                                               const adapter_actor& adapter) {
  std::vector<caf::strong_actor_ptr> out;
  for (auto& link : job->piped_links())
    out.push_back(caf::actor_cast<caf::strong_actor_ptr>(
        spawn_pipe(sys, job, std::move(link), stages, coordinator, adapter)));
  return out;
}

} // namespace deepcee::actors
