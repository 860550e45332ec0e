#include "runtime/plan/node_layout.hpp"

namespace deepcee::runtime {

node_layout layout_of(const runtime::cluster& c, const runtime::plan& plan) {
  node_layout out;
  const auto node_of = [&](int device) { return c.devices.at(static_cast<size_t>(device)).node; };
  for (const auto& pipeline : plan.pipelines)
    for (const auto& stage : pipeline.stages) {
      const auto flat = static_cast<int>(out.stage_node.size());
      out.stage_node.push_back(node_of(stage.devices.at(0)));
      out.first_slot.push_back(static_cast<int>(out.slot_node.size()));
      for (int d : stage.devices) {
        out.slot_node.push_back(node_of(d));
        out.slot_stage.push_back(flat);
      }
    }
  return out;
}

std::vector<int32_t> node_layout::stages_on(int node) const {
  std::vector<int32_t> out;
  for (size_t k = 0; k < stage_node.size(); ++k)
    if (stage_node[k] == node)
      out.push_back(static_cast<int32_t>(k));
  return out;
}

std::vector<int32_t> node_layout::apart_on(int node) const {
  std::vector<int32_t> out;
  for (size_t s = 0; s < slot_node.size(); ++s)
    if (slot_node[s] == node && stage_node.at(static_cast<size_t>(slot_stage[s])) != node)
      out.push_back(static_cast<int32_t>(s));
  return out;
}

bool node_layout::runs_on(int node) const {
  return !stages_on(node).empty() || !apart_on(node).empty();
}

} // namespace deepcee::runtime
