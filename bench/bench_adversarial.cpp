// The planner against a local search over hand-like plans (bench/hand_search.hpp) on
// random cloud-edge-end clusters (runtime/io/cluster_generator.hpp), every plan scored by
// the same simulator. Each seed makes a new cluster, so nothing here can be tuned to a
// fixed list.
//
//   build/bench/bench_adversarial [--seeds 50] [--first-seed 1] [--max-devices 64]
//                                 [--search-s 1.5] [--batch N] [--toml DIR] [--show]
//                                 [--planner-s S] [--estimate-budget N]
//
// Per seed: the cluster, the planner's search time, plans priced in closed form and samples/s,
// the best hand plan found from the independent starts ("hand"), and from the planner's own
// plan ("polish"); the ratio is the planner's samples/s over the best of both. --search-s bounds
// each cluster's local search (split over 3 starts and the planner's plan). --batch overrides every
// cluster's batch (e.g. a prime). --toml DIR writes each cluster's file there; --show prints
// the planner's plan and the best plan found. --planner-s and --estimate-budget set the
// planner's time limit and work budget (planner_options).
#include "hand_search.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/cluster_generator.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/planner/planner.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace deepcee::runtime;

namespace {

struct options {
  int seeds = 50;
  int first_seed = 1;
  int max_devices = 64;
  double search_s = 1.5;
  int batch = 0;
  double planner_s = 0;
  int estimate_budget = 0;
  std::string toml_dir;
  bool show = false;
};

/// Hand starts kept for climbing; the planner's plan is climbed too.
constexpr size_t climbed_starts = 3;

struct row {
  double planner = 0, hand = 0, polish = 0, search_s = 0;
  int simulated = 0, estimated = 0;
  plan planner_plan, best_found; ///< for --show
};

row run_seed(const generated_cluster& g, int batch, const options& o, uint64_t seed) {
  profile_table profiles(make_model_spec(*model_preset(g.model), g.model));
  planner_options po;
  po.model_name = g.model;
  po.global_batch = batch;
  po.time_limit_s = o.planner_s;
  po.estimate_budget = o.estimate_budget;
  const planner_report r = plan_training(g.c, profiles, po);
  row out;
  out.planner = r.best_sim.samples_per_s;
  out.search_s = r.search_s;
  out.estimated = r.plans_estimated;
  deepcee::bench::hand_search hs(g.c, profiles, batch, seed);
  const double share = o.search_s / double(climbed_starts + 1);
  out.planner_plan = r.best;
  for (const auto& s : hs.starts(climbed_starts)) {
    auto found = hs.climb(s, share);
    if (found.rate > out.hand) {
      out.hand = found.rate;
      out.best_found = found.p;
    }
  }
  auto polished = hs.climb({r.best, hs.score(r.best)}, share);
  out.polish = polished.rate;
  if (out.polish > out.hand)
    out.best_found = polished.p;
  out.simulated = hs.simulated;
  return out;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"planner against a local search over hand-like plans on random clusters"};
  app.add_option("--seeds", o.seeds, "clusters")->check(CLI::PositiveNumber);
  app.add_option("--first-seed", o.first_seed, "seed of the first cluster");
  app.add_option("--max-devices", o.max_devices, "devices per cluster at most (>= 4)")
      ->check(CLI::Range(4, 1024));
  app.add_option("--search-s", o.search_s, "seconds of local search per cluster");
  app.add_option("--batch", o.batch, "global batch of every cluster (0: the generator's)");
  app.add_option("--planner-s", o.planner_s,
                 "the planner's time limit (0: by cluster size, negative: none)");
  app.add_option("--estimate-budget", o.estimate_budget,
                 "plans the planner may price (0: by cluster size, negative: none)");
  app.add_option("--toml", o.toml_dir, "write each cluster's file into this folder");
  app.add_flag("--show", o.show, "print the planner's plan and the best found as JSON");
  CLI11_PARSE(app, argc, argv);

  std::printf("%-5s %7s %7s %9s %9s %9s %7s %6s  %s\n", "seed", "plan s", "priced", "planner",
              "hand", "polish", "ratio", "sims", "cluster");
  double worst = 1e30;
  int at_least_one = 0, rows = 0;
  for (int seed = o.first_seed; seed < o.first_seed + o.seeds; ++seed) {
    const generated_cluster g = generate_cluster(uint64_t(seed), {4, o.max_devices});
    if (!o.toml_dir.empty())
      std::ofstream(std::filesystem::path(o.toml_dir) / ("gen-" + std::to_string(seed) + ".toml"))
          << g.toml;
    const int batch = o.batch > 0 ? o.batch : g.batch;
    try {
      const row r = run_seed(g, batch, o, uint64_t(seed));
      const double ratio = r.planner / std::max({r.hand, r.polish, 1e-30});
      worst = std::min(worst, ratio);
      at_least_one += ratio >= 1.0 - 1e-9;
      ++rows;
      std::printf("%-5d %7.2f %7d %9.2f %9.2f %9.2f %7.3f %6d  %s\n", seed, r.search_s, r.estimated,
                  r.planner, r.hand, r.polish, ratio, r.simulated, g.summary.c_str());
      if (o.show)
        std::printf("planner: %s\nbest found: %s\n", plan_to_json(r.planner_plan).c_str(),
                    plan_to_json(r.best_found).c_str());
    } catch (const input_error& e) {
      std::printf("%-5d planner refuses: %s  %s\n", seed, e.what(), g.summary.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("worst planner/best-found %.3f; >= 1.00 on %d of %d (%.0f%%)\n", worst, at_least_one,
              rows, rows ? 100.0 * at_least_one / rows : 0.0);
  return 0;
}
