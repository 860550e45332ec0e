// deepcee run: a whole job in one process, as actors, in the time mode of its job file
// (configs/default.toml when none is given): virtual time on the emulated cluster, wall
// (real) time, or dry (virtual time without the math).
#include "actors/local_job.hpp"
#include "actors/run_trace.hpp"
#include "actors/type_ids.hpp"
#include "runtime/errors.hpp"
#include "runtime/job_config.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/plan_json.hpp"
#include "runtime/planner.hpp"
#include "runtime/simulator.hpp"
#include "runtime/train_config_toml.hpp"
#include "tools/commands.hpp"
#include "tools/job_checkpoint.hpp"
#include "tools/job_setup.hpp"
#include "tools/plan_print.hpp"
#include "tools/progress.hpp"
#include "tools/run_directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#ifndef DEEPCEE_SOURCE_DIR
#define DEEPCEE_SOURCE_DIR "."
#endif

namespace deepcee::tools {
namespace {

struct run_options {
  std::optional<std::string> job;
  std::optional<int> steps;
  std::optional<uint64_t> seed;
  std::optional<std::string> out;
  std::optional<std::string> plan; ///< a plan file instead of the job's
  std::optional<std::string> metrics, resume;
  int trace_steps = 3;
  int step_timeout_s = 120;
};

/// configs/default.toml of the working directory, else of the source tree.
std::filesystem::path default_job() {
  const std::filesystem::path here = "configs/default.toml";
  return std::filesystem::exists(here) ? here : std::filesystem::path(DEEPCEE_SOURCE_DIR) / here;
}

int run_job(const run_options& o) {
  const auto path = o.job ? std::filesystem::path(*o.job) : default_job();
  auto r = resolve_job(path, {o.steps, o.seed, o.plan}, true);
  auto& job = r.job;
  const auto& profile = r.profile;
  const auto& spec = profile.model();
  const auto& report = *r.report;
  const auto& plan = r.plan;
  const auto& corpus = r.corpus;

  std::printf("job %s: %s on %s (%zu devices), %d steps, time %s\n", job.name.c_str(),
              job.model_name.c_str(), job.cluster.name.c_str(), job.cluster.devices.size(),
              job.train.steps, std::string(runtime::to_string(job.time)).c_str());
  print_groups(stdout, job.cluster, report.groups);
  print_plan(stdout, job.cluster, spec, plan);

  const bool wall = job.time == runtime::time_mode::wall;
  const bool dry = job.time == runtime::time_mode::dry;
  std::optional<kernels::checkpoint_contents> resume;
  if (o.resume && dry)
    runtime::fail_input(path, 0,
                        "--resume: a dry-mode job has no weights to load a checkpoint into");
  if (o.resume)
    resume = read_resume_checkpoint(*o.resume, plan.model);

  caf::actor_system_config cfg;
  actors::register_types(cfg);
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  if (dry)
    std::printf("dry mode: the math is skipped, losses are not computed, no checkpoint is "
                "written\n");
  if (wall && job.shape_links)
    std::printf("wall mode: transfers wait on the sender side as the cluster's links say\n");
  actors::local_job run(sys, job.cluster, profile, plan, job.train, corpus,
                        std::chrono::seconds(o.step_timeout_s), {job.time, job.shape_links});
  if (resume) {
    run.restore(resume->params, resume->info.step, resume->info.clock_s, *o.resume);
    resume.reset(); // the stages hold their copies
  }
  // Only once every input has been checked, so that bad input leaves nothing behind.
  const auto dir = make_run_directory(o.out, job.train.out, "run");
  runtime::save_plan(plan, dir / "plan.json");
  job_files files(dir, job.train, o.metrics, !dry);
  auto& log = files.metrics();

  interrupt_flag interrupted;
  progress_bar bar(run.steps_done(), job.train.steps);
  std::vector<actors::step_result> traced;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int first_step = run.steps_done() + 1;
  double virtual_s = 0, loss = NAN, val_loss = NAN, first_start_s = 0;
  int val_step = 0;
  while (run.steps_done() < job.train.steps && !interrupted.raised()) {
    auto r = run.step();
    const int k = static_cast<int>(r.step);
    if (k == first_step)
      first_start_s = r.start_s;
    const double step_s = r.end_s - r.start_s;
    virtual_s = r.end_s;
    loss = r.loss;
    const double real_s = elapsed();
    const double sps = plan.global_batch() / step_s;
    if (wall) {
      log.write({{"step", int64_t{r.step}},
                 {"loss", r.loss},
                 {"lr", r.lr},
                 {"grad_norm", r.grad_norm},
                 {"wall_step_s", step_s},
                 {"samples_per_s", sps},
                 {"real_elapsed_s", real_s}});
      bar.update(k, fmt::format("loss {:.4f} | {:.1f} real samples/s", r.loss, sps));
    } else {
      log.write({{"step", int64_t{r.step}},
                 {"loss", r.loss},
                 {"lr", r.lr},
                 {"grad_norm", r.grad_norm},
                 {"virtual_step_s", step_s},
                 {"virtual_time_s", r.end_s},
                 {"emulated_samples_per_s", sps},
                 {"real_elapsed_s", real_s}});
      bar.update(k, dry ? fmt::format("loss not computed (dry) | {:.1f} emulated samples/s | "
                                      "virtual {:.3f} s",
                                      sps, r.end_s)
                        : fmt::format("loss {:.4f} | {:.1f} emulated samples/s | virtual {:.3f} s",
                                      r.loss, sps, r.end_s));
    }
    if (const auto loss = files.after_step(
            k, wall ? 0 : r.end_s, [&] { return run.gather_parameters(); }, *corpus, real_s)) {
      val_loss = *loss;
      val_step = k;
      bar.message(fmt::format("step {}: validation loss {:.4f}", k, val_loss));
    }
    if (k - first_step < o.trace_steps)
      traced.push_back(std::move(r));
  }
  bar.finish();
  if (files.weights() && !files.saved(run.steps_done()))
    files.save(run.gather_parameters(), run.steps_done());
  {
    auto samples = run.samples();
    const double trace_end = traced.empty() ? 0 : traced.back().end_s;
    std::erase_if(samples, [&](const auto& s) { return s.start_s > trace_end; });
    std::ofstream trace(dir / "trace.json");
    actors::write_run_trace(trace, plan, traced, samples);
  }
  const double real_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int steps_run = run.steps_done() - first_step + 1;
  const double emulated = steps_run * plan.global_batch() / std::max(virtual_s, 1e-30);
  runtime::sim_options so;
  so.steps = 1;
  const auto predicted = runtime::simulate(job.cluster, spec, profile, plan, {}, so);
  const char* ending = interrupted.raised() ? "interrupted" : "summary";
  const auto validation = fmt::format("validation loss {:.4f} at step {}", val_loss, val_step);
  if (wall) {
    std::printf("\n%s: %d steps (%d to %d), final loss %.4f, %s, %s real\n", ending, steps_run,
                first_step, run.steps_done(), loss, validation.c_str(),
                progress_bar::duration(real_s).c_str());
    std::printf("  %-32s %12s\n", "real samples/s", "");
    std::printf("  %-32s %12.2f\n", "this run (actors, wall time)",
                steps_run * plan.global_batch() / std::max(virtual_s - first_start_s, 1e-30));
    std::printf("  %-32s %12s\n", "emulated samples/s", "");
  } else {
    std::printf("\n%s: %d steps (%d to %d), %s, %.3f s emulated in %s real\n", ending, steps_run,
                first_step, run.steps_done(),
                dry ? "losses not computed (dry mode)"
                    : fmt::format("final loss {:.4f}, {}", loss, validation).c_str(),
                virtual_s, progress_bar::duration(real_s).c_str());
    std::printf("  %-32s %12s\n", "emulated samples/s", "");
    std::printf("  %-32s %12.2f\n", "this run (actors)", emulated);
  }
  std::printf("  %-32s %12.2f\n", "simulator, this plan", predicted.samples_per_s);
  for (const auto& s : report.strategies)
    if (s.chosen)
      std::printf("  %-32s %12.2f\n", ("simulator, " + s.strategy).c_str(), s.sim.samples_per_s);
    else
      std::printf("  %-32s %12s  (%s)\n", ("simulator, " + s.strategy).c_str(), "-",
                  s.error.c_str());
  std::printf("wrote %s: %s, plan.json, trace.json\n", dir.string().c_str(), files.names().c_str());
  return interrupted.raised() ? 130 : 0;
}

} // namespace

command_action add_run_command(CLI::App& app) {
  auto o = std::make_shared<run_options>();
  CLI::App* cmd = app.add_subcommand("run", "Run a whole job in one process (actors)");
  cmd->add_option("job", o->job, "Job file (TOML; default: configs/default.toml)");
  cmd->add_option("--steps", o->steps, "Total optimizer steps (overrides the job)");
  cmd->add_option("--seed", o->seed, "Seed of weights and data sampling");
  cmd->add_option("--plan", o->plan, "Plan file (JSON) instead of the job's plan");
  cmd->add_option("--out", o->out, "Run directory (default: a new one under the job's out)");
  cmd->add_option("--metrics", o->metrics, "csv or jsonl (overrides the job)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option("--resume", o->resume, "Continue from this checkpoint (deepcee run or train)");
  cmd->add_option("--trace-steps", o->trace_steps, "Steps written to the trace");
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time")
      ->check(CLI::PositiveNumber);
  return [o] { return run_job(*o); };
}

} // namespace deepcee::tools
