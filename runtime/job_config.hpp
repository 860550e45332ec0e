#pragma once

#include "runtime/cluster.hpp"
#include "runtime/train_config.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace deepcee::runtime {

/// How time passes in a job (DESIGN: Time):
/// - wall: real time; ops run as soon as their inputs are there and are timed by a steady
///   clock (with `shape_links`, transfers also wait as the cluster's link model says);
/// - virtual: the emulated cluster's op and link times, the math for real;
/// - dry: virtual time with the math skipped (no weights, no kernels, no payloads).
enum class time_mode { wall, virtual_time, dry };

std::string_view to_string(time_mode m);

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
struct job_config {
  std::filesystem::path source;
  std::string name = "job";
  time_mode time = time_mode::virtual_time;
  bool shape_links = false; ///< wall mode: emulate the cluster's links on the sender side
  std::filesystem::path cluster_path;
  runtime::cluster cluster;
  std::optional<std::filesystem::path> plan_path; ///< empty: plan = "auto"
  std::string model_name = "custom";
  train_config train;
  int coordinator_node = 0;     ///< index into cluster.nodes
  double connect_timeout_s = 5; ///< joining, and the coordinator's wait for every node
  /// Every node and the coordinator's node beat to each other this often; a peer unheard
  /// for heartbeat_timeout_s (> the interval) stops the job, naming the silent node.
  double heartbeat_interval_s = 1;
  double heartbeat_timeout_s = 5;
};

job_config load_job_config(const std::filesystem::path& path);

} // namespace deepcee::runtime
