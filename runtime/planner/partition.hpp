#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/schedule/schedule.hpp"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

/// The building blocks that both the baselines and the planner use to turn "these devices
/// form these stages" into a concrete plan: per-device costs with prefix sums over layers,
/// sample shares, micro-batch counts and the balanced layer partition.
namespace deepcee::runtime {

/// Per-layer costs of every device of a cluster, memoized per distinct device figures and
/// micro-batch size, with prefix sums so that a range of layers costs O(1).
class cost_cache {
public:
  cost_cache(const cluster& c, const profile_table& profiles);

  int layer_count() const { return layers_; }
  /// F + B + W seconds of layers [first, last) on `device` for `samples` samples.
  double range_time(int device, int first, int last, int samples) const;
  double range_f(int device, int first, int last, int samples) const;
  double range_b(int device, int first, int last, int samples) const;
  double range_w(int device, int first, int last, int samples) const;
  /// Activation bytes kept per micro-batch (until B plus until W) for layers [first, last).
  double range_activation(int device, int first, int last, int samples) const;
  double range_act_until_b(int device, int first, int last, int samples) const;
  double range_act_until_w(int device, int first, int last, int samples) const;
  /// Layers [first, last) on `device` for `samples` samples as a stage that recomputes or
  /// not (with_recompute, the rule the simulator applies too).
  stage_figures stage(int device, int first, int last, int samples, bool recompute) const;
  /// Weights, gradients and AdamW state of layers [first, last).
  double range_state(int first, int last) const;
  /// The optimizer step of layers [first, last) on `device` (profile_table::optimizer_s).
  double range_optimizer(int device, int first, int last) const;
  /// Samples per second of the whole model on one device at `samples` per micro-batch,
  /// the speed that shares are proportional to.
  double speed(int device, int samples = 1) const;

  /// Devices of one class have the same figures and cost the same.
  int figure_class(int device) const { return figure_class_[size_t(device)]; }

  /// Prefix sums over layers (entry l: layers [0, l)) of F, B, W seconds and activation
  /// bytes kept until B and until W, for `device` at `samples` per micro-batch. The range
  /// functions above read these; a caller that asks for many ranges of one device (the
  /// partition's dynamic program) takes them once and skips the lookup.
  struct prefix {
    std::vector<double> f, b, w, act_b, act_w;
  };
  const prefix& sums(int device, int samples) const { return get(device, samples); }

  const cluster& cl() const { return *cluster_; }
  const profile_table& profiles() const { return *profiles_; }

private:
  const prefix& get(int device, int samples) const;

  const cluster* cluster_;
  const profile_table* profiles_;
  int layers_ = 0;
  std::vector<int> figure_class_; ///< per device: index of its distinct figures
  std::vector<int> class_device_; ///< a representative device per class
  std::vector<double> state_prefix_;
  std::vector<std::vector<double>> optimizer_prefix_; ///< per class
  mutable std::map<std::pair<int, int>, prefix> memo_;
};

/// Splits `total` into one share per weight, proportional to the weights by the largest
/// remainder method, every share at least `min_each`. Deterministic (ties go to the
/// earlier index). Throws std::invalid_argument when total < min_each * weights.size().
std::vector<int> split_proportional(int total, const std::vector<double>& weights,
                                    int min_each = 1);

/// Micro-batches each stage keeps between F and the end of its backward under `kind`,
/// for stage s of p with m micro-batches (the bound the schedule documents; greedy is
/// priced as ZB-H1 because its memory limit keeps it there).
int micro_batches_held(schedule_kind kind, int stage, int stages, int micro_batches);

/// Contiguous layer ranges for stages (in pipeline order) with their devices' samples.
struct layer_split {
  std::vector<int> bounds; ///< stages + 1 entries, bounds[0] = 0, back = layer count
  double bottleneck_s = 0; ///< slowest stage's F + B + W per micro-batch
  bool fits = false;       ///< every device holds its state and in-flight activations
};

struct split_request {
  std::vector<std::vector<int>> devices; ///< per stage
  std::vector<std::vector<int>> samples; ///< per stage, per device
  std::vector<int> in_flight;            ///< per stage
  double memory_fraction =
      device::usable_memory_fraction; ///< share of a device's memory the plan may use
  /// When false, memory is ignored (a baseline that does not model it); `fits` still
  /// reports whether the result fits.
  bool respect_memory = true;
};

/// Minimizes the slowest stage's time over contiguous partitions (dynamic programming over
/// prefix sums, O(stages * layers^2 * distinct devices)), each stage at least one layer,
/// subject to memory. When no partition fits memory, returns the time-optimal one with
/// fits = false.
layer_split balance_layers(const cost_cache& costs, const split_request& request);

/// balance_layers with its results kept: a search asks for the same split many times (the
/// replicas of a pipeline; 1F1B and ZB-H1, which hold as many micro-batches; greedy splits
/// whose in-flight cap does not bind). A request is known by what balance_layers reads of
/// it: per stage its in-flight count and, per device in order, its cost class, samples and
/// memory (the partition's distinct members and their sums follow from these); and the
/// memory fraction and whether memory is respected. Equal keys give equal splits.
class split_memo {
public:
  const layer_split& balance(const cost_cache& costs, const split_request& request);
  size_t size() const { return done_.size(); }

private:
  std::map<std::vector<double>, layer_split> done_;
};

/// The uniform split the Megatron and GPipe baselines use: layers as equal as possible,
/// earlier stages taking the remainder.
std::vector<int> uniform_bounds(int layers, int stages);

/// Whether each device of each stage holds its layers under `bounds`.
bool fits_memory(const cost_cache& costs, const split_request& request,
                 const std::vector<int>& bounds);

} // namespace deepcee::runtime
