#pragma once

#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/network_path.hpp"

#include <vector>

/// The network as a re-plan's moves will find it.
///
/// The plan's transfers measure few device pairs, and a re-plan's moves mostly use others:
/// a layer goes from the device that held it to one that did not, often across a path the
/// plan never sent on. Priced on the cluster's figures, a move over a cut path looks as cheap
/// as before the cut. So the pairs no transfer measured are priced on what the measured ones
/// say about the resources they share (a node's interface each way, a WAN path).
///
/// Which resource slowed a drifted pair is not known from that pair alone: its sender's
/// interface, the WAN, or its receiver's. The explanation taken is the smallest set of
/// resources that covers every pair that drifted slower, taken greedily: first the resource
/// that the most such pairs cross, and so on. A resource that some measured pair crosses
/// at its figures (a calm pair) is not slow, and is never taken. So one node's cut interface
/// (every pair to it and from it slower) is that interface, not the far ends of its pairs.
namespace deepcee::runtime {

/// A resource taken as slow: what it passes now, the median of the estimated bandwidths of
/// the drifted pairs it explains. A capacity, not a ratio: pairs of different figures that
/// cross one cut interface all drain at its rate.
struct slow_resource {
  net_resource resource;
  double bandwidth_Bps = 0;
};

/// The slow resources that explain `links`' drifted, slower pairs on `c` (see above).
std::vector<slow_resource> slow_resources(const cluster& c,
                                          const std::vector<link_estimate>& links);

/// The cluster to price state moves on: the monitor's estimated cluster (every drifted pair
/// at its estimate, a WAN that drifted as a whole), and each pair that no transfer measured
/// at its figures, or the smallest capacity among the slow resources on its path if less.
cluster move_cluster(const environment_monitor& monitor);

} // namespace deepcee::runtime
