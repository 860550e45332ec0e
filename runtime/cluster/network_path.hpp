#pragma once

#include "runtime/cluster/cluster.hpp"

#include <tuple>
#include <vector>

/// Which shared network resources a transfer crosses: the one statement of it that the
/// simulator, the virtual cluster and the actors' link model all use (through the transfer
/// parts the simulator's world builds).
namespace deepcee::runtime {

/// One FIFO resource of the network. A transfer occupies every resource on its path from
/// the moment all of them are free until it has drained at the path's bottleneck.
///
/// A node's network interface is modelled as two resources, one per direction (`nic_out`,
/// `nic_in`). Ethernet and InfiniBand ports are full duplex, so what a node sends does not
/// slow down what it receives. But all that it sends shares one queue: activations,
/// gradients and all-reduce traffic, whichever device and pipeline they come from. So does
/// all that it receives.
struct net_resource {
  enum class kind {
    node_bus, ///< inside a node: the directed device pair (a = from device, b = to device)
    nic_out,  ///< node a's interface, sending
    nic_in,   ///< node a's interface, receiving
    wan,      ///< the WAN path from region a to region b
  };
  kind what = kind::node_bus;
  int a = 0;
  int b = 0;

  friend bool operator<(const net_resource& x, const net_resource& y) {
    return std::tie(x.what, x.a, x.b) < std::tie(y.what, y.a, y.b);
  }
  friend bool operator==(const net_resource&, const net_resource&) = default;
};

/// The resources a transfer from device x to device y occupies, in path order. There are
/// none from a device to itself. Between two devices of one node, it is the node's internal
/// link. Otherwise it is the sending node's interface (out), then the directed region pair's
/// WAN path when the regions differ, then the receiving node's interface (in).
std::vector<net_resource> path_between(const cluster& c, int x, int y);

/// The most the two nodes' interfaces let a transfer from device x to device y drain at.
/// That is the smaller `node::nic_Bps` of the two nodes where the file gives one. It is
/// infinity inside one node, and where the file gives none: a node's interface is then as
/// fast as the links the file gives it.
double nic_cap_between(const cluster& c, int x, int y);

} // namespace deepcee::runtime
