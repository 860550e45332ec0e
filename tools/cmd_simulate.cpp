// deepcee simulate: re-evaluates a saved plan, optionally under link changes.
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
};

int run_simulate(const simulate_options& o) {
  runtime::cluster c = runtime::load_cluster(o.cluster);
  runtime::plan p = runtime::load_plan(o.plan);
  runtime::validate_plan(p, static_cast<int>(c.devices.size()), o.plan);
  runtime::model_spec model = runtime::make_model_spec(p.model, p.model_name);
  runtime::measured_profile measured;
  if (o.profile)
    measured = runtime::load_measured_profile(*o.profile);
  runtime::profile_table profiles(model, {}, measured);
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
  if (o.trace) {
    write_trace_file(c, model, profiles, p, timeline, *o.trace, o.steps);
    std::printf("trace written to %s\n", o.trace->c_str());
  }
  return s.out_of_memory ? 1 : 0;
}

} // namespace

command_action add_simulate_command(CLI::App& app) {
  auto o = std::make_shared<simulate_options>();
  CLI::App* cmd = app.add_subcommand("simulate", "Re-evaluate a saved plan in the simulator");
  cmd->add_option("--cluster", o->cluster, "Cluster description (TOML)")->required();
  cmd->add_option("--plan", o->plan, "Plan (JSON, as written by deepcee plan --json)")->required();
  cmd->add_option("--timeline", o->timeline, "Link changes over time (TOML)");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome/Perfetto trace of every simulated step here");
  cmd->add_option("--profile", o->profile, "Measured profile (TOML) overriding estimates");
  cmd->add_option("--steps", o->steps, "Steps to simulate")->capture_default_str();
  return [o] { return run_simulate(*o); };
}

} // namespace deepcee::tools
