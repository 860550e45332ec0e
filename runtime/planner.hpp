#pragma once

#include "runtime/cluster.hpp"
#include "runtime/grouping.hpp"
#include "runtime/plan.hpp"
#include "runtime/profile.hpp"
#include "runtime/simulator.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

/// DeepCEE's strategy planner: a hierarchical, pruned search over asymmetric hybrid
/// pipeline/data-parallel plans whose objective is the simulator's samples/s.
namespace deepcee::runtime {

struct planner_options {
  std::string model_name = "custom";
  /// Sequences per step; 0 picks default_global_batch(model).
  int global_batch = 0;
  std::vector<schedule_kind> schedules{schedule_kind::one_f_one_b, schedule_kind::zb_h1,
                                       schedule_kind::zb_h2, schedule_kind::greedy};
  /// Encodings tried for transfers that cross regions.
  std::vector<compression> compressions{compression::none, compression::bf16, compression::int8};
  /// Candidates the simulator scores after the closed-form ranking; 0 chooses by cluster
  /// size (the simulator's cost grows with devices and micro-batches).
  int simulate_top_k = 0;
  /// Share of a device's memory a plan may fill (the rest: CUDA context, fragmentation).
  double memory_fraction = device::usable_memory_fraction;
  /// Score the baselines too and fall back to the best of them if the search found
  /// nothing faster (the search space contains them; this makes it a guarantee).
  bool compare_baselines = true;
  std::filesystem::path source = "cluster"; ///< for error messages
};

/// One row of the strategy table.
struct strategy_result {
  std::string strategy;       ///< "dp", "gpipe", "megatron", "metis", "deepcee"
  std::optional<plan> chosen; ///< empty when the strategy could not split the batch
  sim_result sim;
  std::string error; ///< why there is no plan
};

struct planner_report {
  plan best;
  sim_result best_sim;
  grouping groups;
  std::vector<strategy_result> strategies; ///< dp, gpipe, megatron, metis, deepcee
  int global_batch = 0;
  int plans_estimated = 0; ///< built and priced by the closed-form estimate
  int plans_simulated = 0; ///< scored by the simulator (baselines included)
  double search_s = 0;     ///< wall time of the whole search, baselines included
  std::string origin;      ///< "search", or the baseline the plan was taken from
};

/// GPT-3's 0.5M tokens per step (its 125M model's batch), in sequences of the model's
/// context, at least 1: 512 sequences for GPT-2 (1024 tokens), 256 for the 7B (2048).
int default_global_batch(const model_config& model);

/// Throws input_error naming `source` when the model's weights, gradients and AdamW state
/// exceed the cluster's total memory (with the needed and available bytes), or when no
/// device can hold even the largest single layer.
void check_model_fits(const cluster& c, const model_spec& model,
                      const std::filesystem::path& source);

/// Runs the search and the baselines. Throws input_error (naming options.source) when the
/// model cannot fit or no plan can split the global batch.
planner_report plan_training(const cluster& c, const profile_table& profiles,
                             const planner_options& options);

/// The two-level grouping the planner uses for this model (one micro-batch's boundary
/// activation prices a link).
grouping planner_grouping(const cluster& c, const model_spec& model);

} // namespace deepcee::runtime
