#pragma once

#include "actors/wire_format.hpp"
#include "runtime/job_config.hpp"
#include "runtime/plan.hpp"
#include "runtime/train_config.hpp"

#include <string>

/// The job deployment of a multi-process job (actors/node_deployment.hpp): every node asks
/// the coordinator's node for it before it spawns its stages, and runs what it says, or
/// says why it cannot. These cross nodes as validated Cap'n Proto (wire_format.hpp).
namespace deepcee::actors {

/// A node asks for its deployment, naming the cluster it read by its fingerprint
/// (runtime::cluster_fingerprint): a node that read another cluster is refused.
struct deployment_request {
  std::string node;
  std::string cluster;
};

/// What the coordinator's node decided for the job: the plan, the training settings and
/// how time passes. `node` is the node it is addressed to. The plan's model is the one
/// that runs: `train.model` equals `plan.model` once loaded.
struct job_deployment {
  std::string job; ///< the job's name, for messages
  std::string node;
  runtime::time_mode time = runtime::time_mode::virtual_time;
  bool shape_links = false;
  runtime::plan plan;
  runtime::train_config train;
  /// The coordinator's wall clock (seconds since its job began) as it answered: a member
  /// sets its own zero to match (aligned_epoch), so that wall-mode times from different
  /// nodes (link samples: sent on one, arrived on another) share one clock.
  double clock_s = 0;
};

/// A node tells the coordinator's node it cannot run the job (it refused the deployment:
/// its data does not load, the plan does not fit its cluster...), so that the job stops at
/// once, naming it, instead of at the connect timeout.
struct node_error {
  std::string node;
  std::string message; ///< one line
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_error& x) {
  return inspect_as_wire(f, x, "node_error");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, deployment_request& x) {
  return inspect_as_wire(f, x, "deployment_request");
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_deployment& x) {
  return inspect_as_wire(f, x, "job_deployment");
}

} // namespace deepcee::actors
