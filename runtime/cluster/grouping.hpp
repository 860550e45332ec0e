#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/device_catalogue.hpp"

#include <string>
#include <vector>

namespace deepcee::runtime {

struct grouping_options {
  /// The representative transfer that prices a link: alpha + bytes / bandwidth. Pass one
  /// micro-batch's stage-boundary activation (model_spec::transfer_bytes).
  double transfer_bytes = 0;
  /// A cut of the dendrogram needs the next merge to cost at least this many times the
  /// previous one; flatter dendrograms leave one network group.
  double min_gap_ratio = 4.0;
  /// When positive, replaces the automatic cut: nodes join while the merge costs at most
  /// this (e.g. the compute time a stage can hide a transfer behind).
  double fast_cost_s = 0;
  /// Level 2 puts devices in one compute group when the slowest is within this factor of
  /// the fastest.
  double speed_ratio = 1.5;
  /// Which peak rate counts as a device's speed.
  precision prec = precision::fp32;
};

/// Devices of similar speed inside one network group, fastest first.
struct compute_group {
  std::vector<int> devices; ///< device ids, ascending
  double min_flops = 0;     ///< slowest member's peak (FLOP/s at the chosen precision)
  double max_flops = 0;
  std::string reason; ///< e.g. "4 x RTX3090: same speed (35.6 TFLOP/s fp32)"
};

/// Devices whose links to each other are fast: whole nodes, since the devices of a node
/// share its host and network interface.
struct network_group {
  std::vector<int> nodes;     ///< node indices, ascending
  std::vector<int> devices;   ///< device ids, ascending
  double internal_cost_s = 0; ///< the last merge inside the group (0 for one node)
  double external_cost_s = 0; ///< cheapest average cost to another group (0 if alone)
  std::vector<compute_group> compute;
  std::string reason;
};

/// One step of the level-1 dendrogram: two clusters, each named by its smallest node
/// index, joined at an average per-device-pair cost.
struct merge_step {
  int left = 0;
  int right = 0;
  double cost_s = 0;
};

struct grouping {
  std::vector<network_group> network; ///< ordered by smallest device id
  std::vector<merge_step> merges;     ///< the whole dendrogram, in merge order
  int merges_applied = 0;             ///< the first this many merges form the groups
  double anchor_cost_s = 0;           ///< the same-region default link's cost
  std::string rule;                   ///< how the cut was chosen, in one line
};

/// Two-level grouping.
///
/// Level 1: average-linkage agglomerative clustering of nodes. The cost between two nodes
/// is the mean over their device pairs of the two directions' transfer times of
/// `transfer_bytes`. The cut is before the highest jump of at least `min_gap_ratio` between
/// consecutive costs of [anchor, merge 1, merge 2, ...]. Average linkage makes them
/// non-decreasing. The anchor is the cost over the cluster's same-region default link. It
/// lets a cluster whose every merge crosses a slow link still split.
/// Taking the highest jump, not the largest, means only the slowest tier of links
/// separates groups: a 1 Gbps access network beside a 10 Gbps LAN does not split a tier,
/// a 100 Mbps WAN above both does. No such jump: one group. `fast_cost_s` > 0 replaces
/// the rule by a fixed budget.
///
/// Level 2: inside each network group, devices are sorted by speed (fastest first, then
/// kind name, then id). A compute group starts at the fastest remaining device and takes
/// every device within `speed_ratio` of it. So devices of one kind with the same figures
/// always stay together.
///
/// Deterministic: ties are broken by the smallest device id.
grouping group_devices(const cluster& c, const grouping_options& options);

} // namespace deepcee::runtime
