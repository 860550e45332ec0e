#pragma once

#include "actors/protocol/interfaces.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <string>

/// A re-plan of a job that runs as several node processes. The coordinator sends each node's
/// replanner the deployment of the new plan, as the job's start sends it to each node
/// (node_deployment.hpp). The node builds its job from it and spawns its part with the
/// job's one wiring path (job_wiring.hpp: spawn_local_part), then answers with its actors.
/// The new actors live until the coordinator stops them (the next re-plan) or the replanner
/// ends with the job.
namespace deepcee::actors {

/// The replanner of node `node` (its index among the cluster's nodes: `index`), which reads
/// `cluster` and `script` as its job file does and keeps wall time from `epoch` (its job's).
node_replanner_actor spawn_node_replanner(caf::actor_system& sys, runtime::cluster cluster,
                                          std::string node, int index,
                                          runtime::link_timeline script,
                                          std::chrono::steady_clock::time_point epoch);

} // namespace deepcee::actors
