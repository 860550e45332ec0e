#include "actors/job/local_job.hpp"

#include "actors/job/checkpoint_transfer.hpp"
#include "actors/job/coordinator.hpp"
#include "kernels/backend/backend.hpp"
#include "kernels/device/make_backend.hpp"
#include "runtime/base/errors.hpp"

#include <caf/scoped_actor.hpp>

#include <stdexcept>
#include <string>

namespace deepcee::actors {

std::shared_ptr<job_context> make_job_context(const runtime::cluster& c,
                                              const runtime::profile_table& profile,
                                              const runtime::plan& plan,
                                              const runtime::train_config& train,
                                              std::shared_ptr<const runtime::text_corpus> corpus,
                                              run_mode mode, const runtime::link_timeline& script) {
  auto job = std::make_shared<job_context>();
  if (train.batch != plan.global_batch())
    runtime::fail_input("job", 0,
                        "training batch " + std::to_string(train.batch) +
                            " differs from the plan's global batch " +
                            std::to_string(plan.global_batch()));
  if (mode.time != runtime::time_mode::dry)
    corpus->require_context(plan.model.context);
  job->plan = plan;
  job->train = train;
  job->train.model = plan.model;
  job->corpus = std::move(corpus);
  // The time events from the start; the coordinator puts each step event in force when the
  // run starts its step (coordinator.hpp), in every time mode and on every node alike.
  job->cluster = std::make_shared<runtime::virtual_cluster>(c, profile.model(), profile, plan,
                                                            runtime::split_step_events(script).due);
  job->script = script;
  job->mode = mode;
  std::vector<int> seen(c.nodes.size(), 0);
  for (const auto& d : c.devices)
    job->local_index.push_back(seen.at(static_cast<size_t>(d.node))++);
  // Real GPUs: a job that cannot have them stops here, named, not in a device actor.
  if (mode.time != runtime::time_mode::dry && train.device == "cuda" &&
      kernels::visible_cuda_devices() == 0)
    runtime::fail_input(train.origin.file.empty() ? "job" : train.origin.file,
                        train.origin.line("device"),
                        "[train] device = \"cuda\", but " + kernels::no_cuda_devices_reason());
  job->epoch = std::chrono::steady_clock::now();
  return job;
}

local_job::local_job(caf::actor_system& sys, const runtime::cluster& c,
                     const runtime::profile_table& profile, const runtime::plan& plan,
                     const runtime::train_config& train,
                     std::shared_ptr<const runtime::text_corpus> corpus,
                     std::chrono::milliseconds step_timeout, run_mode mode,
                     const runtime::link_timeline& script)
    : sys_(sys), guard_(sys), timeout_(step_timeout) {
  auto job = make_job_context(c, profile, plan, train, std::move(corpus), mode, script);
  const auto part = spawn_local_part(sys, job, 0, guard_);
  // The coordinator's own step timeout names the stages a stuck step waits for; step()
  // waits longer, so that this named failure is what the caller sees.
  wired_ = wire_job(sys, std::move(job), wiring_of(part), step_timeout, guard_);
}

step_result local_job::step() {
  auto r = request_step(sys_, wired_.coordinator, steps_done_ + 1, 2 * timeout_);
  if (!r)
    throw std::runtime_error("step " + std::to_string(steps_done_ + 1) + ": " +
                             sys_.render(r.error()));
  ++steps_done_;
  return std::move(*r);
}

std::vector<kernels::parameter_state> local_job::gather_parameters() {
  const auto now = job_now(sys_, wired_, timeout_);
  return actors::gather_parameters(sys_, *now.job, now.stages, timeout_);
}

void local_job::restore(const std::vector<kernels::parameter_state>& params, int step,
                        double clock_s, const std::filesystem::path& source) {
  const auto now = job_now(sys_, wired_, timeout_);
  restore_stages(sys_, *now.job, now.stages, params, step, source, timeout_);
  restore_clock(sys_, wired_.coordinator, clock_s, timeout_);
  steps_done_ = step;
}

std::vector<runtime::link_report> local_job::links() {
  caf::scoped_actor self{sys_};
  std::vector<runtime::link_report> out;
  self->request(wired_.adapter, timeout_, links_atom_v)
      .receive([&](std::vector<runtime::link_report>& v) { out = std::move(v); },
               [](caf::error&) {});
  return out;
}

std::vector<link_sample> local_job::samples() {
  caf::scoped_actor self{sys_};
  std::vector<link_sample> out;
  self->request(wired_.adapter, timeout_, samples_atom_v)
      .receive([&](std::vector<link_sample>& v) { out = std::move(v); }, [](caf::error&) {});
  return out;
}

} // namespace deepcee::actors

namespace deepcee::actors {

std::vector<adapt_record> local_job::decisions() {
  return adapter_decisions(sys_, wired_.adapter, timeout_);
}

int64_t local_job::adapt_to(const runtime::plan& next, int64_t at_step) {
  auto at = actors::adapt_to(sys_, wired_.adapter, next, at_step, timeout_);
  if (!at)
    throw std::runtime_error("adapt_to step " + std::to_string(at_step) + ": " +
                             sys_.render(at.error()));
  return *at;
}

} // namespace deepcee::actors
