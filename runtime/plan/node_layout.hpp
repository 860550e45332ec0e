#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/plan/plan.hpp"

#include <cstdint>
#include <vector>

namespace deepcee::runtime {

/// Where the parts of a plan run in a multi-process job (`deepcee node`). A stage, with its
/// group actor, runs on the node of its first device. Each of its devices runs on its own
/// node, which may be the stage's node or another one (a stage whose devices span nodes).
/// A node apart from the stage spawns the device's actor, and hands it over when it joins.
///
/// Devices are numbered by slot: every device of every stage, flat stage by flat stage
/// (job_context::flat_index), in its stage's order.
struct node_layout {
  std::vector<int> stage_node; ///< per flat stage
  std::vector<int> first_slot; ///< per flat stage: the slot of its device 0
  std::vector<int> slot_node;  ///< per slot: its device's node
  std::vector<int> slot_stage; ///< per slot: its flat stage

  bool empty() const { return stage_node.empty(); }
  int slot(int flat, int index) const { return first_slot.at(static_cast<size_t>(flat)) + index; }
  /// Whether device `index` of flat stage `flat` runs on another node than its stage (never
  /// in an empty layout: one process runs every node).
  bool apart(int flat, int index) const {
    if (empty())
      return false;
    const auto s = static_cast<size_t>(slot(flat, index));
    return slot_node.at(s) != stage_node.at(static_cast<size_t>(flat));
  }
  /// Flat stages that run on `node`.
  std::vector<int32_t> stages_on(int node) const;
  /// Slots of the devices on `node` that run apart from their stage.
  std::vector<int32_t> apart_on(int node) const;
  /// Whether `node` runs a stage or a device apart (it must join the job).
  bool runs_on(int node) const;
};

/// The layout of `plan` on cluster `c` (the plan's devices must be devices of `c`).
node_layout layout_of(const runtime::cluster& c, const runtime::plan& plan);

} // namespace deepcee::runtime
