#include "runtime/step/device_places.hpp"

namespace deepcee::runtime {

std::vector<size_t> apart_first(const std::vector<bool>& apart, const std::vector<size_t>& asked) {
  std::vector<size_t> order;
  order.reserve(asked.size());
  for (bool first : {true, false})
    for (size_t k = 0; k < asked.size(); ++k)
      if (apart.at(asked[k]) == first)
        order.push_back(k);
  return order;
}

std::string boot_of_node(const std::vector<std::string>& node_boots, int node) {
  return static_cast<size_t>(node) < node_boots.size() ? node_boots[static_cast<size_t>(node)]
                                                       : std::string();
}

std::string boot_of_stage(const node_layout& layout, int flat,
                          const std::vector<std::string>& node_boots) {
  const auto& nodes = layout.stage_node;
  if (static_cast<size_t>(flat) >= nodes.size())
    return {};
  return boot_of_node(node_boots, nodes[static_cast<size_t>(flat)]);
}

std::vector<std::string> device_boots(const node_layout& layout, int flat, size_t devices,
                                      const std::vector<std::string>& node_boots) {
  std::vector<std::string> out;
  for (size_t j = 0; j < devices; ++j) {
    const int node = layout.apart(flat, static_cast<int>(j))
                         ? layout.slot_node.at(static_cast<size_t>(layout.slot(flat, int(j))))
                         : layout.stage_node.at(static_cast<size_t>(flat));
    out.push_back(boot_of_node(node_boots, node));
  }
  return out;
}

} // namespace deepcee::runtime
