#include "tools/job_steps.hpp"

#include "actors/job/adapter_actor.hpp"
#include "actors/job/checkpoint_transfer.hpp"
#include "actors/job/coordinator.hpp"
#include "actors/job/run_trace.hpp"
#include "actors/protocol/type_ids.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/errors.hpp"
#include "tools/node_process.hpp"

#include <caf/scoped_actor.hpp>

#include <spdlog/spdlog.h>

#include <cstdio>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace deepcee::tools {

namespace {

/// The whole model's weights and moments as gathered from the stages after step `step`.
class gathered_weights : public step_weights {
public:
  gathered_weights(std::vector<kernels::parameter_state> params,
                   std::shared_ptr<const actors::job_context> job, int step, double clock_s,
                   job_watch* watch)
      : params_(std::move(params)), job_(std::move(job)), step_(step), clock_s_(clock_s),
        watch_(watch) {}

  /// The whole model on one CPU backend, over the batches `deepcee train` and `deepcee eval`
  /// use.
  double validation_loss() override {
    const auto& train = job_->train;
    auto be = kernels::make_backend({});
    kernels::gpt_model model(*be, train.model, train.seed);
    kernels::load_parameter_states(params_, *be, model, nullptr, "the stages' weights");
    const double loss =
        kernels::evaluate(*be, model, *job_->corpus, train.batch, train.eval_batches, train.seed);
    if (watch_)
      watch_->validated(step_, loss);
    return loss;
  }

  void save(const std::filesystem::path& file) override {
    kernels::save_checkpoint(file, params_, {step_, job_->train.model, job_->train.seed, clock_s_});
  }

private:
  std::vector<kernels::parameter_state> params_;
  std::shared_ptr<const actors::job_context> job_;
  int step_;
  double clock_s_;
  job_watch* watch_;
};

} // namespace

std::optional<kernels::checkpoint_contents>
read_resume_checkpoint(const std::optional<std::string>& resume,
                       const std::filesystem::path& job_file, runtime::time_mode time,
                       const runtime::model_config& model) {
  if (!resume)
    return std::nullopt;
  if (time == runtime::time_mode::dry)
    runtime::fail_input(job_file, 0,
                        "--resume: a dry-mode job has no weights to load a checkpoint into");
  auto contents = kernels::read_checkpoint(*resume);
  kernels::require_same_model(*resume, contents.info, model);
  return contents;
}

void configure_actors(actors::system_config& cfg) {
  cfg.set("scheduler.max-threads", 2);
  // Idle workers wait on the shared queue's condition variable. CAF's default (work
  // stealing) has them poll with 50 us sleeps: ~20k wake-ups a second per idle worker.
  // Those preempt the device's compute on a machine with few cores. On the fidelity bench's
  // 3-node loopback job, a stage's F took 4.1 ms with polling and 3.3 ms without.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("logger.console", caf::atom("none"));
}

job_steps::job_steps(caf::actor_system& sys, const actors::wired_job& job,
                     std::chrono::milliseconds wait, int trace_steps)
    : sys_(sys), job_(job), wait_(wait),
      trace_steps_(static_cast<size_t>(std::max(trace_steps, 0))) {}

step_record job_steps::step() {
  const auto started = std::chrono::steady_clock::now();
  auto r = actors::request_step(sys_, job_.coordinator, done_ + 1, wait_);
  if (!r)
    throw std::runtime_error(reason_text(sys_, r.error()));
  ++done_;
  if (script_)
    for (const auto& u : r->injected)
      script_->injected(u.script);
  show_new_decisions();
  const bool watched = watch_ && watch_->on();
  const bool traced = traced_.size() < trace_steps_;
  // The plan that ran it: a re-plan or rebalance takes effect when the next step starts.
  const auto ran = watched || traced ? actors::job_now(sys_, job_, wait_).plan : runtime::plan{};
  if (watched)
    watch_->stepped(
        *r, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), ran,
        link_totals());
  clock_s_ = job_.job->wall() ? 0 : r->end_s;
  const step_record out{
      static_cast<int>(r->step), r->loss, r->lr, r->grad_norm, r->start_s, r->end_s};
  if (traced) {
    traced_.push_back(std::move(*r));
    traced_plans_.push_back(ran);
  }
  return out;
}

void job_steps::show_new_decisions() {
  // The adapter logs each decision as it makes it (spdlog info, on stdout); under a quieter
  // log level the run still shows them, one line each, after the step that led to them.
  const bool print = !spdlog::should_log(spdlog::level::info);
  const bool watched = watch_ && watch_->on();
  if (!print && !watched)
    return;
  for (const auto& d : actors::adapter_decisions(sys_, job_.adapter, wait_))
    if (d.sequence > shown_) {
      if (print)
        std::printf("%s\n", actors::describe(d).c_str());
      if (watched)
        watch_->decided({int(d.step), d.kind, d.reason, d.predicted_gain - 1});
      shown_ = d.sequence;
    }
  std::fflush(stdout);
}

std::unique_ptr<step_weights> job_steps::weights() {
  // A re-plan's stages once it is in force.
  const auto now = actors::job_now(sys_, job_, wait_);
  try {
    return std::make_unique<gathered_weights>(
        actors::gather_parameters(sys_, *now.job, now.stages, wait_), now.job, done_, clock_s_,
        watch_);
  } catch (const actors::stage_gone& e) {
    throw weights_unavailable(e.what());
  }
}

std::vector<runtime::link_report> job_steps::link_totals() const {
  std::vector<runtime::link_report> links;
  caf::scoped_actor self{sys_};
  self->request(job_.adapter, wait_, actors::links_atom_v)
      .receive([&](std::vector<runtime::link_report>& v) { links = std::move(v); },
               [](caf::error&) {}); // a snapshot without links rather than a failed step
  return links;
}

void job_steps::restore(const kernels::checkpoint_contents& c,
                        const std::filesystem::path& source) {
  const auto now = actors::job_now(sys_, job_, wait_);
  actors::restore_stages(sys_, *now.job, now.stages, c.params, c.info.step, source, wait_);
  actors::restore_clock(sys_, job_.coordinator, c.info.clock_s, wait_);
  done_ = c.info.step;
}

void job_steps::write_trace(const std::filesystem::path& file, const runtime::cluster& cluster,
                            const std::vector<runtime::trace_instant>& injected) const {
  std::vector<actors::link_sample> samples;
  caf::scoped_actor self{sys_};
  self->request(job_.adapter, wait_, actors::samples_atom_v)
      .receive([&](std::vector<actors::link_sample>& v) { samples = std::move(v); },
               [](caf::error&) {}); // a trace without transfers rather than no run directory
  const double trace_end = traced_.empty() ? 0 : traced_.back().end_s;
  std::erase_if(samples, [&](const auto& s) { return s.start > trace_end; });
  std::ofstream out(file);
  std::vector<runtime::trace_instant> shown;
  for (const auto& i : injected)
    if (i.at_s <= trace_end)
      shown.push_back(i);
  actors::write_run_trace(out, traced_plans_, cluster, traced_, samples, shown);
}

} // namespace deepcee::tools
