#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/planner/partition.hpp"
#include "runtime/planner/plan_estimate.hpp"

#include <optional>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// Which devices form which stages of one pipeline, in pipeline order.
struct pipeline_layout {
  std::vector<std::vector<int>> stages;
};

struct build_options {
  std::string strategy;
  std::string model_name;
  int micro_batch_size = 1;
  schedule_kind schedule = schedule_kind::one_f_one_b;
  /// Applied to every hop between stages in different regions.
  compression cross_region = compression::none;
  /// Applied to every hop between stages on different nodes of one region.
  compression inter_node = compression::none;
  bool balance_layers = true;       ///< false: uniform split (Megatron, GPipe)
  bool proportional_samples = true; ///< false: equal samples per device
  bool proportional_micro = true;   ///< false: equal micro-batches per pipeline
  bool respect_memory = true;       ///< the layer split avoids out-of-memory stages
  double memory_fraction = device::usable_memory_fraction;
  /// At most this many micro-batches in flight per stage when the layers are split under
  /// memory (0: the schedule's own bound). For greedy schedules, which keep within each
  /// stage's memory: the split may then give a stage more layers than the schedule's
  /// usual depth would allow, and the schedule runs fewer micro-batches at once there.
  int max_in_flight = 0;
  /// Which links weigh the pipelines' micro-batch counts (their bottleneck includes the
  /// slowest transfer between their stages).
  link_model links = link_model::real;
};

/// Builds a complete plan: samples per device (proportional to speed or equal), the layer
/// split (balanced or uniform), micro-batch counts per pipeline (proportional to each
/// pipeline's bottleneck rate or equal) and compression across regions. Returns nothing
/// when the shape cannot carry the batch: the global batch is not a multiple of the
/// micro-batch size, a stage has more devices than the micro-batch has samples, there are
/// fewer micro-batches than pipelines, or a pipeline has more stages than layers. With a
/// `memo`, layer splits asked for before are taken from it (the same plan, found faster).
std::optional<plan> build_plan(const cost_cache& costs, const std::vector<pipeline_layout>& layout,
                               int global_batch, const build_options& options,
                               split_memo* memo = nullptr);

/// A plan of build_plan with the encodings of `o` (cross_region, inter_node) instead of its
/// own: the layer split and samples do not depend on them, so only the hops' compression
/// and the micro-batch counts (weighed by each pipeline's bottleneck) are redone. Equal to
/// build_plan with `o` when `p` came from build_plan with `o`'s other options.
plan with_encodings(const cost_cache& costs, plan p, int global_batch, const build_options& o);

/// Samples of each micro-batch for the devices of one stage.
std::vector<int> stage_samples(const cost_cache& costs, const std::vector<int>& devices,
                               int micro_batch, bool proportional);

/// Divisors of n in [lo, hi], ascending.
std::vector<int> divisors_between(int n, int lo, int hi);

/// At most `keep` values spread over `values` (first and last always kept), so a batch
/// with many divisors does not multiply the search.
std::vector<int> thin(const std::vector<int>& values, size_t keep);

} // namespace deepcee::runtime
