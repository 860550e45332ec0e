#pragma once

#include "actors/protocol/job_context.hpp"
#include "actors/protocol/protocol.hpp"
#include "runtime/cluster/cluster.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

/// The coordinator's node is the one source of a multi-process job's plan and training
/// settings, so that the nodes cannot disagree on them. It plans (or loads the plan file)
/// once and deploys the result. Every other node builds its job from that deployment. From
/// its own job file it keeps only what is its own (its name, the addresses, timeouts) and
/// the cluster, which must be the same.
namespace deepcee::actors {

/// The deployment of a job as the coordinator's node resolved it (`node` left empty: the
/// registry addresses a copy to each node that asks).
job_deployment make_deployment(const std::string& job_name, const runtime::plan& plan,
                               const runtime::train_config& train, run_mode mode);

/// This node's job, built from the deployment and laid out on the cluster's nodes
/// (job_context::layout). A deployment is checked first, against the cluster this node read,
/// because a wrong one must fail here, named, not in some actor later. It must be addressed
/// to `node`; its plan must fit the cluster (device ids) and its model; its training settings
/// must pass train's rules; its data must load here. Throws input_error saying what is wrong.
std::shared_ptr<job_context> accept_deployment(const job_deployment& d,
                                               const runtime::cluster& cluster,
                                               const std::string& node,
                                               const runtime::link_timeline& script = {});

/// This node's wall-time zero such that its clock reads the coordinator's: the coordinator's
/// clock read `clock_s` as it answered a request this node sent at `asked` and got the
/// answer of at `answered` (half the round trip each way).
std::chrono::steady_clock::time_point aligned_epoch(std::chrono::steady_clock::time_point asked,
                                                    std::chrono::steady_clock::time_point answered,
                                                    double clock_s);

/// Sets `job`'s epoch and clock_error_s from deployment `d`, asked for at `asked` and
/// answered at `answered`: on the coordinator's host boot (`boot_id`, this node's) its epoch
/// exactly (error 0), else aligned_epoch, within half the round trip.
void align_clock(job_context& job, const job_deployment& d, const std::string& boot_id,
                 std::chrono::steady_clock::time_point asked,
                 std::chrono::steady_clock::time_point answered);

} // namespace deepcee::actors
