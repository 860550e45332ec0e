#pragma once

#include "runtime/cluster/cluster.hpp"

#include <string>

namespace deepcee::runtime {

/// Sixteen hex digits that change whenever anything the job computes with changes: the
/// regions, the nodes (names, regions, devices), each device's kind and figures, the link
/// defaults and overrides. A node's host and port are left out (each process reaches its
/// peers at addresses of its own), and so are the cluster's name and the file's line
/// numbers. The same on every platform (FNV-1a over a canonical text, doubles exact), so
/// the nodes of a multi-process job can compare what they read.
std::string cluster_fingerprint(const cluster& c);

} // namespace deepcee::runtime
