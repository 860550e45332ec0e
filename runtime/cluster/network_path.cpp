#include "runtime/cluster/network_path.hpp"

#include <algorithm>
#include <limits>

namespace deepcee::runtime {

std::vector<net_resource> path_between(const cluster& c, int x, int y) {
  if (x == y)
    return {};
  const auto& dx = c.devices[static_cast<size_t>(x)];
  const auto& dy = c.devices[static_cast<size_t>(y)];
  if (dx.node == dy.node)
    return {{net_resource::kind::node_bus, x, y}};
  std::vector<net_resource> out{{net_resource::kind::nic_out, dx.node, 0}};
  if (dx.region != dy.region)
    out.push_back({net_resource::kind::wan, dx.region, dy.region});
  out.push_back({net_resource::kind::nic_in, dy.node, 0});
  return out;
}

double nic_cap_between(const cluster& c, int x, int y) {
  const auto& dx = c.devices[static_cast<size_t>(x)];
  const auto& dy = c.devices[static_cast<size_t>(y)];
  double cap = std::numeric_limits<double>::infinity();
  if (dx.node == dy.node)
    return cap;
  for (int n : {dx.node, dy.node})
    if (const auto& nic = c.nodes[static_cast<size_t>(n)].nic_Bps)
      cap = std::min(cap, *nic);
  return cap;
}

} // namespace deepcee::runtime
