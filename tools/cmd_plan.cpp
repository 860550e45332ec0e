// deepcee plan: groups, the searched plan and the table of every strategy.
#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/io/profile_toml.hpp"
#include "runtime/planner/planner.hpp"
#include "tools/commands.hpp"
#include "tools/plan_print.hpp"
#include "tools/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

namespace deepcee::tools {
namespace {

struct plan_options {
  std::string cluster, model = "gpt2-124m";
  std::optional<int> batch;
  std::optional<std::string> json, trace, profile;
  int top_k = 0;
  double search_s = 0;
  bool no_recompute = false;
};

/// "  OUT OF MEMORY: cloud0/0 needs 145.3 GB of 21.6 GB" for a row that does not fit
/// (the device that overflows most, its peak and its usable memory); empty otherwise.
std::string out_of_memory_note(const runtime::cluster& c, const runtime::sim_result& s) {
  const runtime::memory_shortfall m = runtime::worst_shortfall(c, s);
  if (m.device < 0)
    return s.out_of_memory ? "  OUT OF MEMORY" : "";
  return "  OUT OF MEMORY: " + c.devices[size_t(m.device)].name + " needs " +
         runtime::format_bytes(m.need) + " of " + runtime::format_bytes(m.usable);
}

runtime::model_config model_of(const std::string& name) {
  auto config = runtime::model_preset(name);
  if (!config) {
    std::string names;
    for (const auto& n : runtime::model_preset_names())
      names += (names.empty() ? "" : ", ") + n;
    runtime::fail_input("--model", 0, "unknown model '" + name + "' (known: " + names + ")");
  }
  return *config;
}

runtime::planner_options planner_options_of(const plan_options& o) {
  runtime::planner_options po;
  po.model_name = o.model;
  po.source = o.cluster;
  po.simulate_top_k = o.top_k;
  po.recompute = !o.no_recompute;
  po.time_limit_s = runtime::user_time_limit_s(o.search_s, o.cluster);
  if (o.batch) {
    if (*o.batch < 1 || *o.batch > runtime::max_batch)
      runtime::fail_input(o.cluster, 0,
                          "--batch " + std::to_string(*o.batch) +
                              ": the global batch must be in 1.." +
                              std::to_string(runtime::max_batch));
    po.global_batch = *o.batch;
  }
  return po;
}

/// "search 12/40 device sets | 310 estimated, 12 simulated".
std::string progress_text(const runtime::planner_progress& p) {
  std::string text = p.phase + " " + std::to_string(p.done);
  if (p.total > 0)
    text += "/" + std::to_string(p.total);
  text += p.phase == "baselines" ? " simulated" : p.phase == "search" ? " device sets" : " plans";
  text += " | " + std::to_string(p.plans_estimated) + " estimated, " +
          std::to_string(p.plans_simulated) + " simulated";
  return text;
}

/// Every strategy's row, then the best baseline against the chosen plan.
void print_strategies(const runtime::cluster& c, const runtime::planner_report& r) {
  // Restricted baselines ("dp (cloud only)") need a wider first column.
  int width = 9;
  for (const auto& row : r.strategies)
    width = std::max(width, static_cast<int>(row.strategy.size()));
  std::printf("\n%-*s %12s %11s %8s %12s %10s\n", width, "strategy", "samples/s", "step", "bubble",
              "peak mem", "vs deepcee");
  for (size_t i = 0; i < r.strategies.size(); ++i) {
    const auto& row = r.strategies[i];
    if (!row.chosen) {
      std::printf("%-*s %s\n", width, row.strategy.c_str(), row.error.c_str());
      continue;
    }
    const auto& s = row.sim;
    double ratio = r.best_sim.samples_per_s > 0 ? s.samples_per_s / r.best_sim.samples_per_s : 0;
    std::printf("%-*s %12.2f %11s %7.1f%% %12s %9.3fx%s%s\n", width, row.strategy.c_str(),
                s.samples_per_s, runtime::format_duration(s.step_time_s).c_str(),
                100 * s.bubble_ratio, runtime::format_bytes(s.peak_bytes).c_str(), ratio,
                out_of_memory_note(c, s).c_str(),
                static_cast<int>(i) == r.best_baseline ? "  <- best baseline" : "");
  }
  if (r.best_baseline >= 0) {
    const auto& b = r.strategies[size_t(r.best_baseline)];
    std::printf("\nbest baseline: %s, %.2f samples/s; deepcee is %.2fx of it\n", b.strategy.c_str(),
                b.sim.samples_per_s,
                b.sim.samples_per_s > 0 ? r.best_sim.samples_per_s / b.sim.samples_per_s : 0.0);
  } else {
    std::printf("\nbest baseline: none fits memory\n");
  }
}

int run_plan(const plan_options& o) {
  runtime::cluster c = runtime::load_cluster(o.cluster);
  runtime::model_spec model = runtime::make_model_spec(model_of(o.model), o.model);
  runtime::profile_table profiles = profiles_for(c, model, o.profile);

  runtime::planner_options po = planner_options_of(o);
  // The search can take minutes on large clusters: say where it is (stderr, after 1 s).
  progress_line progress(stderr);
  po.progress = [&](const runtime::planner_progress& p) { progress.update(progress_text(p)); };
  runtime::planner_report r = runtime::plan_training(c, profiles, po);
  progress.finish();

  std::printf("cluster %s: %zu devices, %zu nodes, %zu regions; model %s (%.1fM parameters), "
              "global batch %d\n",
              c.name.c_str(), c.devices.size(), c.nodes.size(), c.regions.size(), o.model.c_str(),
              double(model.total_params()) / 1e6, r.global_batch);
  print_groups(stdout, c, r.groups);
  print_plan(stdout, c, model, r.best);
  print_sim(stdout, r.best_sim);
  print_strategies(c, r);
  const double ideal = runtime::ideal_samples_per_s(c, profiles);
  std::printf("\nideal: %.2f samples/s (every device alone, no communication); deepcee is "
              "%.2f of it\n",
              ideal, ideal > 0 ? r.best_sim.samples_per_s / ideal : 0.0);
  std::printf("\nsearch: %.3f s (baselines %.3f s), %d plans estimated, %d simulated; chosen "
              "from %s\n",
              r.search_s, r.baselines_s, r.plans_estimated, r.plans_simulated, r.origin.c_str());

  if (o.json) {
    runtime::save_plan(r.best, *o.json);
    std::printf("plan written to %s\n", o.json->c_str());
  }
  if (o.trace) {
    write_trace_file(c, model, profiles, r.best, {}, *o.trace);
    std::printf("trace written to %s\n", o.trace->c_str());
  }
  return 0;
}

} // namespace

command_action add_plan_command(CLI::App& app, const process_environment&) {
  auto o = std::make_shared<plan_options>();
  CLI::App* cmd = app.add_subcommand("plan", "Search a training plan and compare strategies");
  cmd->add_option("--cluster", o->cluster, "Cluster description (TOML)")->required();
  cmd->add_option("--model", o->model, "Model preset")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Global batch in sequences (default: 0.5M tokens)");
  cmd->add_option("--json", o->json, "Write the chosen plan (JSON) here");
  cmd->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of one step here");
  cmd->add_option("--profile", o->profile, "Measured profile (TOML) overriding estimates");
  cmd->add_option("--top-k", o->top_k, "Candidates the simulator scores (0: by cluster size)");
  cmd->add_option("--search-s", o->search_s,
                  "Seconds the search may take (0: 10 up to 64 devices, 30 beyond)");
  cmd->add_flag("--no-recompute", o->no_recompute,
                "Never recompute activations (plans keep every activation until B)");
  return [o] { return run_plan(*o); };
}

} // namespace deepcee::tools
