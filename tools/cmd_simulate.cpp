// deepcee simulate: re-evaluates a saved plan, optionally under link changes.
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/io/profile_toml.hpp"
#include "runtime/sim/simulator.hpp"
#include "tools/commands.hpp"
#include "tools/plan_print.hpp"

#include <memory>
#include <optional>

namespace deepcee::tools {
namespace {

struct simulate_options {
  std::string cluster, plan;
  std::optional<std::string> timeline, trace, profile;
  int steps = 1;
  bool adaptive = false;
};

/// One line per step of the adaptive run beside the static plan's step at the same
/// index, then both runs' totals.
void print_adaptive(const runtime::adaptive_result& r) {
  std::printf("\nadaptive simulation: the monitor reads every step's transfers and compute; "
              "a decision takes effect at the next step boundary\n");
  std::printf("%5s %11s %11s %10s %12s  %s\n", "step", "time", "step time", "samples/s",
              "static s/s", "decision");
  for (size_t k = 0; k < r.adaptive.size(); ++k) {
    const auto& a = r.adaptive[k];
    const auto& f = r.fixed[k];
    std::printf("%5d %11s %11s %10.1f %12.1f", a.step, runtime::format_duration(a.start_s).c_str(),
                runtime::format_duration(a.step_s).c_str(), a.samples_per_s, f.samples_per_s);
    if (a.decision) {
      const auto& d = *a.decision;
      std::printf("  %s", d.reason.c_str());
      if (d.kind != runtime::decision_kind::keep)
        std::printf(" [predicted step %s -> %s, %.2fx]",
                    runtime::format_duration(d.old_step_s).c_str(),
                    runtime::format_duration(d.new_step_s).c_str(), d.predicted_gain());
      else
        std::printf(" [keep]");
    }
    std::printf("\n");
  }
  const auto total = [](const std::vector<runtime::adaptive_step>& steps) {
    double t = 0;
    for (const auto& s : steps)
      t += s.step_s;
    return t;
  };
  const double samples =
      static_cast<double>(r.global_batch) * static_cast<double>(r.adaptive.size());
  const double ts = total(r.fixed), ta = total(r.adaptive);
  std::printf("static:   %zu steps in %s, %.1f samples/s\n", r.fixed.size(),
              runtime::format_duration(ts).c_str(), samples / ts);
  std::printf("adaptive: %zu steps in %s, %.1f samples/s (%.2fx static)\n", r.adaptive.size(),
              runtime::format_duration(ta).c_str(), samples / ta, ts / ta);
}

int run_simulate(const simulate_options& o) {
  runtime::cluster c = runtime::load_cluster(o.cluster);
  runtime::plan p = runtime::load_plan(o.plan);
  runtime::validate_plan(p, static_cast<int>(c.devices.size()), o.plan);
  runtime::model_spec model = runtime::make_model_spec(p.model, p.model_name);
  runtime::profile_table profiles = profiles_for(c, model, o.profile);
  runtime::link_timeline timeline;
  if (o.timeline)
    timeline = runtime::load_link_timeline(*o.timeline, c);
  if (o.steps < 1)
    runtime::fail_input("--steps", 0, "at least one step");

  runtime::sim_options so;
  so.steps = o.steps;
  runtime::sim_result s = runtime::simulate(c, model, profiles, p, timeline, so);
  std::printf("cluster %s: %zu devices; model %s\n", c.name.c_str(), c.devices.size(),
              p.model_name.c_str());
  print_plan(stdout, c, model, p);
  print_sim(stdout, s);
  if (s.step_times_s.size() > 1) {
    std::printf("step times:");
    for (double t : s.step_times_s)
      std::printf(" %s", runtime::format_duration(t).c_str());
    std::printf("\n");
  }
  if (o.adaptive) {
    runtime::adaptive_options ao;
    ao.steps = o.steps;
    ao.policy.planner.model_name = p.model_name;
    ao.policy.planner.source = o.cluster;
    print_adaptive(runtime::simulate_adaptive(c, model, profiles, p, timeline, ao));
  }
  if (o.trace) {
    write_trace_file(c, model, profiles, p, timeline, *o.trace, o.steps);
    std::printf("trace written to %s\n", o.trace->c_str());
  }
  return s.out_of_memory ? 1 : 0;
}

} // namespace

command_action add_simulate_command(CLI::App& app, const process_environment&) {
  auto o = std::make_shared<simulate_options>();
  CLI::App* cmd = app.add_subcommand("simulate", "Re-evaluate a saved plan in the simulator");
  cmd->add_option("--cluster", o->cluster, "Cluster description (TOML)")->required();
  cmd->add_option("--plan", o->plan, "Plan (JSON, as written by deepcee plan --json)")->required();
  cmd->add_option("--timeline", o->timeline, "Link changes over time (TOML)");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome/Perfetto trace of every simulated step here");
  cmd->add_option("--profile", o->profile, "Measured profile (TOML) overriding estimates");
  cmd->add_option("--steps", o->steps, "Steps to simulate")->capture_default_str();
  cmd->add_flag("--adaptive", o->adaptive,
                "Also run the dynamic environment adapter step by step (monitor, policy) and "
                "compare it with the static plan");
  return [o] { return run_simulate(*o); };
}

} // namespace deepcee::tools
