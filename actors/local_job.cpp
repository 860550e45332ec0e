#include "actors/local_job.hpp"

#include "actors/adapter_actor.hpp"
#include "actors/checkpoint_transfer.hpp"
#include "actors/coordinator.hpp"
#include "actors/pipe_actor.hpp"
#include "actors/stage_actor.hpp"
#include "kernels/make_backend.hpp"
#include "runtime/errors.hpp"

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <stdexcept>
#include <string>

namespace deepcee::actors {

std::shared_ptr<job_context>
make_job_context(const runtime::cluster& c, const runtime::profile_table& profile,
                 const runtime::plan& plan, const runtime::train_config& train,
                 std::shared_ptr<const runtime::text_corpus> corpus, run_mode mode) {
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
  job->cluster = std::make_shared<runtime::virtual_cluster>(c, profile.model(), profile, plan);
  job->mode = mode;
  std::vector<int> seen(c.nodes.size(), 0);
  for (const auto& d : c.devices)
    job->local_index.push_back(seen.at(static_cast<size_t>(d.node))++);
  // Real GPUs: a job that cannot have them stops here, named, not in a device actor.
  if (mode.time != runtime::time_mode::dry && train.device == "cuda" &&
      kernels::visible_cuda_devices() == 0)
    runtime::fail_input("job", 0,
                        "[train] device = \"cuda\", but " + kernels::no_cuda_devices_reason());
  job->epoch = std::chrono::steady_clock::now();
  return job;
}

local_job::local_job(caf::actor_system& sys, const runtime::cluster& c,
                     const runtime::profile_table& profile, const runtime::plan& plan,
                     const runtime::train_config& train,
                     std::shared_ptr<const runtime::text_corpus> corpus,
                     std::chrono::milliseconds step_timeout, run_mode mode)
    : sys_(sys), job_(make_job_context(c, profile, plan, train, std::move(corpus), mode)),
      timeout_(step_timeout) {
  adapter_ = spawn_adapter(sys);
  for (int p = 0; p < static_cast<int>(plan.pipelines.size()); ++p)
    for (int s = 0; s < job_->stage_count(p); ++s)
      stages_.push_back(spawn_stage(sys, job_, p, s));
  // The coordinator's own step timeout names the stages a stuck step waits for; the
  // request below waits longer, so that this named failure is what the caller sees.
  coordinator_ = spawn_coordinator(sys, job_, stages_, {}, step_timeout);
  stage_wiring wiring;
  for (auto& s : stages_)
    wiring.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
  wiring.coordinator = caf::actor_cast<caf::strong_actor_ptr>(coordinator_);
  wiring.adapter = caf::actor_cast<caf::strong_actor_ptr>(adapter_);
  pipes_ = spawn_pipes(sys, job_, stages_, coordinator_, adapter_);
  wiring.pipes = pipes_;
  caf::scoped_actor self{sys};
  for (auto& s : stages_)
    self->send(s, wiring);
}

local_job::~local_job() {
  caf::scoped_actor self{sys_};
  for (auto& s : stages_)
    self->send_exit(s, caf::exit_reason::user_shutdown);
  self->send_exit(coordinator_, caf::exit_reason::user_shutdown);
  self->send_exit(adapter_, caf::exit_reason::user_shutdown);
  for (auto& p : pipes_)
    self->send_exit(caf::actor_cast<caf::actor>(p), caf::exit_reason::user_shutdown);
}

step_result local_job::step() {
  caf::scoped_actor self{sys_};
  step_result out;
  std::string error;
  self->request(coordinator_, 2 * timeout_, step_atom_v, static_cast<int64_t>(steps_done_ + 1))
      .receive([&](step_result& r) { out = std::move(r); },
               [&](caf::error& e) { error = sys_.render(e); });
  if (!error.empty())
    throw std::runtime_error("step " + std::to_string(steps_done_ + 1) + ": " + error);
  ++steps_done_;
  return out;
}

std::vector<kernels::parameter_state> local_job::gather_parameters() {
  return actors::gather_parameters(sys_, *job_, stages_, timeout_);
}

void local_job::restore(const std::vector<kernels::parameter_state>& params, int step,
                        double clock_s, const std::filesystem::path& source) {
  restore_stages(sys_, *job_, stages_, params, step, source, timeout_);
  restore_clock(sys_, coordinator_, clock_s, timeout_);
  steps_done_ = step;
}

std::vector<link_summary> local_job::links() {
  caf::scoped_actor self{sys_};
  std::vector<link_summary> out;
  self->request(adapter_, timeout_, links_atom_v)
      .receive([&](std::vector<link_summary>& v) { out = std::move(v); }, [](caf::error&) {});
  return out;
}

std::vector<link_sample> local_job::samples() {
  caf::scoped_actor self{sys_};
  std::vector<link_sample> out;
  self->request(adapter_, timeout_, samples_atom_v)
      .receive([&](std::vector<link_sample>& v) { out = std::move(v); }, [](caf::error&) {});
  return out;
}

} // namespace deepcee::actors
