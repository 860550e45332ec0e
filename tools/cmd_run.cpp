// deepcee run: a whole job in one process, as actors, in the time mode of its job file
// (configs/default.toml when none is given): virtual time on the emulated cluster, wall
// (real) time, or dry (virtual time without the math).
#include "actors/job/adapter_actor.hpp"
#include "actors/job/local_job.hpp"
#include "actors/protocol/type_ids.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/job_token.hpp"
#include "runtime/io/metrics_writer.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/io/train_config_toml.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"
#include "tools/adapt_orders.hpp"
#include "tools/commands.hpp"
#include "tools/job_setup.hpp"
#include "tools/job_steps.hpp"
#include "tools/job_watch.hpp"
#include "tools/node_network.hpp"
#include "tools/plan_print.hpp"
#include "tools/progress.hpp"
#include "tools/run_directory.hpp"
#include "tools/script_log.hpp"
#include "tools/step_loop.hpp"

#include <caf/actor_system.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <unistd.h>

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
  std::optional<std::string> plan;    ///< a plan file instead of the job's
  std::optional<std::string> profile; ///< a measured profile instead of the job's
  std::optional<std::string> metrics, resume;
  std::optional<std::string> inspect; ///< HOST:PORT or off
  int trace_steps = 3;
  int step_timeout_s = 120;
  std::vector<std::string> adapt_to; ///< STEP:PLAN (adapt_orders.hpp)
  std::optional<double> search_s;    ///< the planner's time limit
};

/// configs/default.toml of the working directory, else of the source tree.
std::filesystem::path default_job() {
  const std::filesystem::path here = "configs/default.toml";
  return std::filesystem::exists(here) ? here : std::filesystem::path(DEEPCEE_SOURCE_DIR) / here;
}

/// The job, its device groups and its plan, before anything runs.
void print_job(const resolved_job& r) {
  const auto& job = r.job;
  std::printf("job %s: %s on %s (%zu devices), %d steps, time %s\n", job.name.c_str(),
              job.model_name.c_str(), job.cluster.name.c_str(), job.cluster.devices.size(),
              job.train.steps, std::string(runtime::to_string(job.time)).c_str());
  print_groups(stdout, job.cluster,
               r.report ? r.report->groups
                        : runtime::planner_grouping(job.cluster, r.profile.model()));
  print_plan(stdout, job.cluster, r.profile.model(), r.plan);
}

/// How the run's time passes, said once before its steps.
void print_time_mode(const runtime::job_config& job) {
  if (job.time == runtime::time_mode::dry)
    std::printf("dry mode: the math is skipped, losses are not computed, no checkpoint is "
                "written\n");
  if (job.time == runtime::time_mode::wall && job.shape_links)
    std::printf("wall mode: transfers wait on the sender side as the cluster's links say\n");
}

/// Samples per second in the metrics and on the bar: real ones in wall time, emulated ones
/// in virtual and dry time.
class run_view : public bar_view {
public:
  run_view(int first, int total, runtime::time_mode time, int global_batch, int context,
           script_log& script)
      : bar_view(first, total), time_(time),
        global_batch_(global_batch), clock_{std::string(runtime::to_string(time)),
                                            double(global_batch), double(context)},
        script_(script) {}

  /// The script's events of this step are reported with its row.
  runtime::metric_row row(const step_record& r, double elapsed_s) override {
    script_.step_done(r.step, r.end_s);
    return metrics_row(r, elapsed_s, clock_);
  }

protected:
  std::string fields(const step_record& r, double) override {
    return job_progress_fields(clock_.clock, r.loss, samples_per_s(r), r.end_s);
  }

private:
  double samples_per_s(const step_record& r) const { return global_batch_ / r.seconds(); }

  runtime::time_mode time_;
  int global_batch_;
  metrics_clock clock_;
  script_log& script_;
};

/// Samples per second over steps [first, last) (0-based) of one side of an adaptive
/// simulation.
double samples_per_s(const std::vector<runtime::adaptive_step>& steps, int global_batch, int first,
                     int last) {
  double seconds = 0;
  for (int k = std::max(first, 0); k < last && k < int(steps.size()); ++k)
    seconds += steps[size_t(k)].step_s;
  return seconds > 0 ? (last - first) * double(global_batch) / seconds : 0;
}

/// Under a script in virtual or dry time: the plan the job started with under the run's
/// script, over the steps this run ran. The simulator predicts it without the adapter
/// ("static"). It also predicts it with the adapter's own policy and drift bands
/// (runtime::simulate_adaptive).
void print_scripted(const resolved_job& r, const loop_outcome& done,
                    const runtime::link_timeline& script, double this_run) {
  const auto& job = r.job;
  if (script.empty() || job.time == runtime::time_mode::wall || done.steps_run() < 1)
    return;
  const actors::adapter_options adapter;
  runtime::adaptive_options ao;
  ao.steps = done.steps_done;
  ao.band = adapter.band;
  ao.policy = adapter.policy;
  ao.policy.planner.model_name = r.plan.model_name;
  ao.liveness_s = job.heartbeat_timeout_s;
  ao.snapshot_every = job.snapshot_every;
  runtime::adaptive_result sim;
  try {
    sim = runtime::simulate_adaptive(job.cluster, r.profile.model(), r.profile, r.plan, script, ao);
  } catch (const runtime::job_stopped& e) { // a kill that leaves some layer on no node
    std::printf("  %-32s %12s  (%s)\n", "simulator, static", "-", e.what());
    return;
  }
  const int first = done.first_step - 1;
  const double fixed = samples_per_s(sim.fixed, sim.global_batch, first, done.steps_done);
  const double adaptive = samples_per_s(sim.adaptive, sim.global_batch, first, done.steps_done);
  std::printf("  %-32s %12.2f  (this plan under the script, no adapter)\n", "simulator, static",
              fixed);
  std::printf("  %-32s %12.2f  (this plan under the script, the adapter's policy%s)\n",
              "simulator, adaptive", adaptive, job.adapt ? "" : "; off in this job");
  if (fixed > 0)
    std::printf("  %-32s %11.2fx\n", "this run / simulator, static", this_run / fixed);
}

/// The closing lines: what ran, this run's samples per second and the simulator's, per
/// strategy the planner tried.
void print_summary(const resolved_job& r, const loop_outcome& done, bool interrupted, double real_s,
                   const runtime::link_timeline& script) {
  const auto& job = r.job;
  const auto& plan = r.plan;
  const bool wall = job.time == runtime::time_mode::wall;
  const bool dry = job.time == runtime::time_mode::dry;
  const int steps_run = done.steps_run();
  const double virtual_s = done.last ? done.last->end_s : 0;
  const double loss = done.last ? done.last->loss : NAN;
  const char* ending = interrupted ? "interrupted" : "summary";
  const auto validation = done.validation();
  if (wall) {
    const double first_start_s = done.first ? done.first->start_s : 0;
    std::printf("\n%s: %d steps (%d to %d), final loss %.4f, %s, %s real\n", ending, steps_run,
                done.first_step, done.steps_done, loss, validation.c_str(),
                progress_bar::duration(real_s).c_str());
    std::printf("  %-32s %12s\n", "real samples/s", "");
    std::printf("  %-32s %12.2f\n", "this run (actors, wall time)",
                steps_run * plan.global_batch() / std::max(virtual_s - first_start_s, 1e-30));
    std::printf("  %-32s %12s\n", "emulated samples/s", "");
  } else {
    std::printf("\n%s: %d steps (%d to %d), %s, %.3f s emulated in %s real\n", ending, steps_run,
                done.first_step, done.steps_done,
                dry ? "losses not computed (dry mode)"
                    : fmt::format("final loss {:.4f}, {}", loss, validation).c_str(),
                virtual_s, progress_bar::duration(real_s).c_str());
    std::printf("  %-32s %12s\n", "emulated samples/s", "");
    const double this_run = steps_run * plan.global_batch() / std::max(virtual_s, 1e-30);
    std::printf("  %-32s %12.2f\n", "this run (actors)", this_run);
    print_scripted(r, done, script, this_run);
  }
  runtime::sim_options so;
  so.steps = 1;
  const auto predicted = runtime::simulate(job.cluster, r.profile.model(), r.profile, plan, {}, so);
  std::printf("  %-32s %12.2f%s\n", "simulator, this plan", predicted.samples_per_s,
              script.empty() ? "" : "  (no script)");
  if (!r.report)
    return;
  for (const auto& s : r.report->strategies)
    if (s.chosen)
      std::printf("  %-32s %12.2f\n", ("simulator, " + s.strategy).c_str(), s.sim.samples_per_s);
    else
      std::printf("  %-32s %12s  (%s)\n", ("simulator, " + s.strategy).c_str(), "-",
                  s.error.c_str());
}

int run_job(const run_options& o, const runtime::token_environment& token_env) {
  const auto path = o.job ? std::filesystem::path(*o.job) : default_job();
  const auto r = resolve_job(path, {o.steps, o.seed, o.plan, o.profile, o.search_s}, true);
  const auto& job = r.job;
  const auto orders = read_adapt_orders(o.adapt_to, r.plan);
  print_job(r);
  auto resume = read_resume_checkpoint(o.resume, path, job.time, r.plan.model);
  const auto inspect_at = inspect_address_of(o.inspect, job);

  actors::system_config cfg;
  configure_actors(cfg);
  caf::actor_system sys{cfg};
  print_time_mode(job);
  const auto step_timeout = std::chrono::seconds(o.step_timeout_s);
  const auto& script = job.script; // step events: at the steps' real starts (coordinator)
  actors::local_job run(
      sys, job.cluster, r.profile, r.plan, job.train, r.corpus, step_timeout,
      {job.time, job.shape_links, job.adapt, job.heartbeat_timeout_s, job.snapshot_every}, script);
  job_steps steps(sys, run.wired(), 2 * step_timeout, o.trace_steps);
  if (resume) {
    steps.restore(*resume, *o.resume);
    resume.reset(); // the stages hold their copies
  }
  job_watch watch(make_snapshot_builder(job, r.profile, r.plan, r.report), inspect_at,
                  runtime::find_job_token(std::nullopt, job.token_file, token_env).value_or(""),
                  job.inspect_hosts, inspect_at ? inspect_tls(job, job.coordinator_node) : nullptr);
  steps.watch(&watch);
  watch.started(steps.steps_done());
  apply_adapt_orders(sys, run.wired(), orders, 2 * step_timeout);
  // Only once every input has been checked, so that bad input leaves nothing behind.
  const auto dir = make_run_directory(o.out, job.train.out, "run");
  runtime::save_plan(r.plan, dir / "plan.json");
  run_files files(dir, job.train, o.metrics, job.time != runtime::time_mode::dry);
  script_log injected(dir, script, job.cluster);
  steps.log_script(&injected);
  injected.on_event([&watch](int step, const auto& e) { watch.injected(step, e); });

  // On a terminal the progress bar is redrawn in place. A log line (an injected event, an
  // adapter's decision) clears it first, so that each stands on a line of its own. The bar
  // comes back below it at the next step.
  if (::isatty(::fileno(stdout)) == 1)
    spdlog::set_pattern("\r\033[K%+");
  interrupt_flag interrupted;
  run_view view(steps.steps_done(), job.train.steps, job.time, r.plan.global_batch(),
                r.plan.model.context, injected);
  const auto start = std::chrono::steady_clock::now();
  const auto done = run_steps(steps, files, view, interrupted);
  steps.write_trace(dir / "trace.json", job.cluster, injected.instants());
  print_summary(r, done, interrupted.raised(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                script);
  std::printf("wrote %s: %s, plan.json, trace.json%s\n", dir.string().c_str(),
              files.names().c_str(), injected.empty() ? "" : ", events.csv");
  return interrupted.raised() ? 130 : 0;
}

} // namespace

command_action add_run_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<run_options>();
  CLI::App* cmd = app.add_subcommand("run", "Run a whole job in one process (actors)");
  cmd->add_option("job", o->job, "Job file (TOML; default: configs/default.toml)");
  cmd->add_option("--steps", o->steps, "Total optimizer steps (overrides the job)");
  cmd->add_option("--seed", o->seed, "Seed of weights and data sampling");
  cmd->add_option("--plan", o->plan, "Plan file (JSON) instead of the job's plan");
  cmd->add_option("--profile", o->profile,
                  "Measured profile (TOML, deepcee profile) instead of the job's");
  cmd->add_option("--out", o->out, "Run directory (default: a new one under the job's out)");
  cmd->add_option("--metrics", o->metrics, "csv or jsonl (overrides the job)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option("--resume", o->resume, "Continue from this checkpoint (deepcee run or train)");
  cmd->add_option("--trace-steps", o->trace_steps, "Steps written to the trace (from the first)")
      ->capture_default_str();
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--inspect", o->inspect,
                  "Where `deepcee inspect` attaches: HOST:PORT (port 0: any) or off (default: "
                  "the job's [inspect] addr, else 127.0.0.1:0)");
  cmd->add_option("--adapt-to", o->adapt_to,
                  "STEP:PLAN: run PLAN (the job's layout, other micro-batches, device splits or "
                  "compressions) from STEP on, through the adapter (repeatable)");
  cmd->add_option("--search-s", o->search_s,
                  "Seconds the planner may take (0: 10 up to 64 devices, 30 beyond)");
  return [o, token_env = env.token] { return run_job(*o, token_env); };
}

} // namespace deepcee::tools
