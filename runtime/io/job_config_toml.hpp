#pragma once

#include "runtime/plan/job_config.hpp"

#include <filesystem>

namespace deepcee::runtime {

/// A job file (TOML), parsed once:
///
///     name = "default"
///     time = "virtual"                      # virtual | wall | dry
///     shape_links = false                   # wall only: senders wait as the cluster's
///                                           # links would (latency + bytes / bandwidth,
///                                           # FIFO per link, compression counted)
///     cluster = "clusters/cee-small.toml"   # relative to the job file
///     plan = "auto"                         # auto (the planner) or a plan JSON file
///     model = "small"                       # a preset; or [train.model]
///     [train]                               # the keys of a train config (single.toml)
///     steps = 300
///     coordinator = "c0"                    # the node that drives the job (default: first)
///     connect_timeout = 5                   # seconds a node waits for the others
///     heartbeat_interval = 1                # seconds between heartbeats of the nodes
///     heartbeat_timeout = 5                 # seconds of silence that stop the job
///     [[node]]                              # where a cluster node's process listens
///     name = "c0"                           # (overrides the cluster file's host and port)
///     host = "127.0.0.1"
///     port = 45001
///
/// Every problem is an input_error naming the file (and the line where toml++ gives one).
job_config load_job_config(const std::filesystem::path& path);

/// The job's [train] rules (validate), except that dry time, which computes no token,
/// takes a model of any vocabulary.
void validate_job_train(const job_config& job,
                        const std::filesystem::path& source = "train config");

} // namespace deepcee::runtime
