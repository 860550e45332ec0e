// deepcee run: a whole job in one process, as actors, in the time mode of its job file
// (configs/default.toml when none is given): virtual time on the emulated cluster, wall
// (real) time, or dry (virtual time without the math).
#include "actors/local_job.hpp"
#include "actors/run_trace.hpp"
#include "actors/type_ids.hpp"
#include "runtime/errors.hpp"
#include "runtime/job_config.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/planner.hpp"
#include "runtime/simulator.hpp"
#include "runtime/train_config_toml.hpp"
#include "tools/commands.hpp"
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

  const auto dir = make_run_directory(o.out, job.train.out, "run");
  runtime::save_plan(plan, dir / "plan.json");
  runtime::metrics_writer log(dir / "metrics.csv", runtime::metrics_format::csv);

  caf::actor_system_config cfg;
  actors::register_types(cfg);
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  const bool wall = job.time == runtime::time_mode::wall;
  const bool dry = job.time == runtime::time_mode::dry;
  if (dry)
    std::printf("dry mode: the math is skipped, losses are not computed\n");
  if (wall && job.shape_links)
    std::printf("wall mode: transfers wait on the sender side as the cluster's links say\n");
  actors::local_job run(sys, job.cluster, profile, plan, job.train, corpus,
                        std::chrono::seconds(o.step_timeout_s), {job.time, job.shape_links});

  progress_bar bar(0, job.train.steps);
  std::vector<actors::step_result> traced;
  const auto start = std::chrono::steady_clock::now();
  double virtual_s = 0, loss = 0, first_start_s = 0;
  for (int k = 1; k <= job.train.steps; ++k) {
    auto r = run.step();
    if (k == 1)
      first_start_s = r.start_s;
    const double step_s = r.end_s - r.start_s;
    virtual_s = r.end_s;
    loss = r.loss;
    const double real_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
    if (k <= o.trace_steps)
      traced.push_back(std::move(r));
  }
  bar.finish();
  {
    auto samples = run.samples();
    const double trace_end = traced.empty() ? 0 : traced.back().end_s;
    std::erase_if(samples, [&](const auto& s) { return s.start_s > trace_end; });
    std::ofstream trace(dir / "trace.json");
    actors::write_run_trace(trace, plan, traced, samples);
  }
  const double real_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double emulated = job.train.steps * plan.global_batch() / std::max(virtual_s, 1e-30);
  runtime::sim_options so;
  so.steps = 1;
  const auto predicted = runtime::simulate(job.cluster, spec, profile, plan, {}, so);
  if (wall) {
    std::printf("\nsummary: %d steps, final loss %.4f, %s real\n", job.train.steps, loss,
                progress_bar::duration(real_s).c_str());
    std::printf("  %-32s %12s\n", "real samples/s", "");
    std::printf("  %-32s %12.2f\n", "this run (actors, wall time)",
                job.train.steps * plan.global_batch() / std::max(virtual_s - first_start_s, 1e-30));
    std::printf("  %-32s %12s\n", "emulated samples/s", "");
  } else {
    std::printf("\nsummary: %d steps, %s, %.3f s emulated in %s real\n", job.train.steps,
                dry ? "losses not computed (dry mode)"
                    : fmt::format("final loss {:.4f}", loss).c_str(),
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
  std::printf("wrote %s: metrics.csv, plan.json, trace.json\n", dir.string().c_str());
  return 0;
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
  cmd->add_option("--trace-steps", o->trace_steps, "Steps written to the trace");
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time");
  return [o] { return run_job(*o); };
}

} // namespace deepcee::tools
