#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/grouping.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/plan_estimate.hpp"
#include "runtime/sim/simulator.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

/// DeepCEE's strategy planner: a hierarchical, pruned search over asymmetric hybrid
/// pipeline/data-parallel plans whose objective is the simulator's samples/s.
namespace deepcee::runtime {

/// Where the search is, for a progress line: `phase` is "baselines" (simulating them),
/// "search" (`done` of `total` device sets priced in closed form) or "simulate" (`done` of
/// `total` shortlisted plans); total 0: not known.
struct planner_progress {
  std::string phase;
  int done = 0;
  int total = 0;
  int plans_estimated = 0;
  int plans_simulated = 0;
};

struct planner_options {
  std::string model_name = "custom";
  /// Sequences per step; 0 picks default_global_batch(model).
  int global_batch = 0;
  std::vector<schedule_kind> schedules{schedule_kind::one_f_one_b, schedule_kind::zb_h1,
                                       schedule_kind::zb_h2, schedule_kind::greedy};
  /// Encodings tried for transfers between nodes: across regions, and on every hop between
  /// nodes of a region (the runtime executes a plan's send_compression on any hop).
  std::vector<compression> compressions{compression::none, compression::bf16, compression::int8};
  /// Try activation recomputation per stage (stage_plan::recompute) where memory binds: a
  /// plan keeps it only where it then fits, or runs faster with more micro-batches in flight.
  bool recompute = true;
  /// Skip, in the closed-form search, the plans whose lower bounds already lose to the best
  /// plan so far (by search_prune_factor) and the recomputation variants that cannot beat
  /// their plan. false prices every plan the search enumerates: the reference that the
  /// tests compare the pruned search with.
  bool prune = true;
  /// Candidates the simulator scores after the closed-form ranking; 0 chooses by cluster
  /// size (the simulator's cost grows with devices and micro-batches).
  int simulate_top_k = 0;
  /// Share of a device's memory a plan may fill (the rest: CUDA context, fragmentation).
  double memory_fraction = device::usable_memory_fraction;
  /// Score the baselines too and fall back to the best of them if the search found
  /// nothing faster (the search space contains them; this makes it a guarantee).
  bool compare_baselines = true;
  /// Also score each baseline restricted to one network group or one region (each that
  /// can hold the model and is not the whole cluster) and report the fastest as its own
  /// row, e.g. "dp (cloud only)": nobody runs DDP across a 100 Mbps WAN, so the fair
  /// comparison is with the baseline on the best group alone. Regions count too because
  /// a uniformly slow network (every link 500 Mbps) is one network group, yet a user
  /// would still try the baseline on one region. Clusters of more than 64 devices try
  /// only the three groups with the most aggregate compute, to keep the search fast.
  bool restricted_baselines = true;
  /// Wall time the search may take, baselines included: 0 chooses by cluster size
  /// (planner_time_limit_s), a negative value sets none. Past 40% of it the closed-form
  /// search stops enumerating shapes (it has ranked the likeliest first: the fastest device
  /// sets, few pipelines, every micro-batch size of a layout); past 80% the simulator's
  /// shortlist and last improvement stop (the plan so far is kept, so the result depends on
  /// the machine's speed only where the limit binds). A search that prices every plan
  /// (prune false, the tests' reference) has no limit.
  double time_limit_s = 0;
  /// Plans the closed-form search may price before it stops enumerating (once some plan
  /// that fits memory was priced): a budget in work, not seconds, so that where it binds
  /// before time_limit_s the plan is the same on a busy host as on an idle one. 0 chooses
  /// planner_estimate_budget, a negative value sets none; a search that prices every plan
  /// (prune false) has none.
  int estimate_budget = 0;
  std::filesystem::path source = "cluster"; ///< for error messages
  /// Called on the planner's thread as the search goes (the planner itself prints nothing).
  std::function<void(const planner_progress&)> progress;
};

/// One row of the strategy table.
struct strategy_result {
  std::string strategy;       ///< "dp", "gpipe", "megatron", "metis", "deepcee", or a
                              ///< restricted baseline such as "dp (cloud only)"
  std::optional<plan> chosen; ///< empty when the strategy could not split the batch
  sim_result sim;
  std::string error;    ///< why there is no plan
  std::string baseline; ///< "dp", "gpipe", "megatron" or "metis"; empty for deepcee
  /// The devices a restricted baseline may use (one network group or region), ascending;
  /// empty: every device.
  std::vector<int> restricted_devices;
  std::string restricted_to; ///< that group's name ("cloud"); empty: every device
};

struct planner_report {
  plan best;
  sim_result best_sim;
  grouping groups;
  /// dp, gpipe, megatron, metis (each followed by its best single-group variant when
  /// some group or region smaller than the cluster can hold the model), then deepcee.
  std::vector<strategy_result> strategies;
  /// Index in `strategies` of the fastest baseline row (restricted ones included; a plan
  /// that runs out of memory ranks below every one that fits); -1 when none has a plan.
  int best_baseline = -1;
  int global_batch = 0;
  int plans_estimated = 0; ///< built and priced by the closed-form estimate
  int plans_simulated = 0; ///< scored by the simulator (baselines included)
  double search_s = 0;     ///< wall time of the whole search, baselines included
  double baselines_s = 0;  ///< of which building and simulating the baselines
  std::string origin;      ///< "search", or the baseline the plan was taken from
};

/// Where a simulated plan overflows memory most (memory_shortfall); device -1 when it fits.
memory_shortfall worst_shortfall(const cluster& c, const sim_result& s);

/// The sum over the cluster's devices of each one's samples/s training the whole model
/// alone, without communication, memory or optimizer, at its fastest micro-batch of 1 to
/// 64 samples: no plan can beat it, so a plan's share of it says what the search and the
/// network leave on the table.
double ideal_samples_per_s(const cluster& c, const profile_table& profiles);

/// GPT-3's 0.5M tokens per step (its 125M model's batch), in sequences of the model's
/// context, at least 1: 512 sequences for GPT-2 (1024 tokens), 256 for the 7B (2048).
int default_global_batch(const model_config& model);

/// Throws input_error naming `source` when the model's weights, gradients and AdamW state
/// exceed the cluster's total memory (with the needed and available bytes), or when no
/// device can hold even the largest single layer.
void check_model_fits(const cluster& c, const model_spec& model,
                      const std::filesystem::path& source);

/// Runs the search and the baselines. The plan it returns fits every device's memory in the
/// simulator; a baseline that does not is never the best baseline. Throws input_error
/// (naming options.source) when the model cannot fit, when no plan can split the global
/// batch, or when no plan found fits memory: one line with the model, the smallest
/// per-device need of any plan found and the largest device's usable memory.
planner_report plan_training(const cluster& c, const profile_table& profiles,
                             const planner_options& options);

/// A network group's short name for tables: its region's name when it is exactly the
/// nodes of one or more whole regions ("cloud", "edge0+edge1"), else its nodes' names.
std::string network_group_name(const cluster& c, const network_group& g);

/// The default planner_options::time_limit_s: 10 s up to 64 devices, 30 s beyond.
double planner_time_limit_s(size_t devices);

/// The time limit a user gave (`--search-s`) as planner_options::time_limit_s: none or 0
/// chooses by cluster size. A negative one is an input_error naming `source`.
double user_time_limit_s(std::optional<double> given, const std::filesystem::path& source);

/// The default planner_options::estimate_budget. A 50-device cluster prices its first 12,000
/// plans in about 1 s on a two-core host busy with builds (the likeliest shapes come first and
/// cost least), well within the 4 s search share of its 10 s limit, so the plan is the same on
/// that host busy or idle. Beyond 64 devices an estimate costs more and the 30 s limit may still
/// bind first.
inline constexpr int planner_estimate_budget = 12000;

/// The two-level grouping the planner uses for this model (one micro-batch's boundary
/// activation prices a link).
grouping planner_grouping(const cluster& c, const model_spec& model);

} // namespace deepcee::runtime
