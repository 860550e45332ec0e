#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/planner/partition.hpp"

#include <string>
#include <vector>

/// The strategies deepcee is compared against. Each builds a plan that the same simulator
/// scores, so the comparison is between strategies, not between cost models. A baseline
/// uses every device it is given (none of them can leave a device out) and never
/// compresses. By default it is given the whole cluster, as the planner issue specifies;
/// `baseline_request::devices` restricts it to a subset (one network group), the way a
/// user who would never run DDP across a WAN lays it out on the best region alone.
/// Each throws input_error (naming `source`) when the global batch cannot be split its way.
namespace deepcee::runtime {

struct baseline_request {
  std::string model_name;
  int global_batch = 0;
  double memory_fraction = device::usable_memory_fraction;
  std::filesystem::path source; ///< the cluster file, for error messages
  /// The devices the baseline may use, ascending; empty: every device of the cluster.
  std::vector<int> devices;
  /// Names the subset in the plan's `excluded` reasons ("baseline restricted to group
  /// cloud"); only read when `devices` is not empty.
  std::string restricted_to;
};

/// The request's devices: `r.devices`, or every device of `c` when it is empty.
std::vector<int> baseline_devices(const cluster& c, const baseline_request& r);

/// Data parallel: one pipeline of one stage holding every device (of the request), samples of a
/// micro-batch split as equally as the batch allows; the fewest micro-batches (gradient
/// accumulation) that fit every device's memory, and gradients ring all-reduced over all devices.
plan make_dp_plan(const cost_cache& costs, const baseline_request& request);

/// Pipeline parallel the way Megatron users lay it out without tensor parallelism: one
/// stage per node in config order (pipeline across nodes, data parallel inside a node;
/// nodes are merged in order when there are more nodes than layers), layers split
/// uniformly, equal samples per device, one pipeline, and the smallest micro-batch that
/// gives every device of the widest stage one sample. `megatron` runs 1F1B, `gpipe` GPipe.
plan make_megatron_plan(const cost_cache& costs, const baseline_request& request);
plan make_gpipe_plan(const cost_cache& costs, const baseline_request& request);

/// Metis (USENIX ATC 2024) with its own cost model, which assumes one uniform bandwidth
/// (the cluster's same-region default) between nodes. It searches data-parallel degrees
/// (pipelines) and stage counts, with devices sorted by kind (fastest first) and dealt to
/// pipelines kind by kind, each pipeline's devices cut into contiguous equal-sized stage
/// groups; layers balanced by stage speed under memory, samples within a stage and
/// micro-batches proportional to speed; 1F1B. The plan its estimate ranks first is
/// returned, for the simulator to re-score on the real links.
plan make_metis_plan(const cost_cache& costs, const baseline_request& request);

} // namespace deepcee::runtime
