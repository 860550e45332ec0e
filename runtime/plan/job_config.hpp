#pragma once

#include "runtime/base/train_config.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// How time passes in a job (DESIGN: Time).
/// `wall` is real time. Ops run as soon as their inputs are there, and a steady clock times
/// them. With `shape_links`, transfers also wait as the cluster's link model says.
/// `virtual_time` takes the emulated cluster's op and link times, and does the math for real.
/// `dry` is virtual time with the math skipped: no weights, no kernels, no payloads.
enum class time_mode { wall, virtual_time, dry };

/// `[security] certificate, key, ca`: TLS between the nodes (transport/tls_identity.hpp).
/// One job file usually serves every node, so a `[[node]]` table may give its own
/// certificate and key; [security]'s serve every node that gives none.
struct tls_config {
  std::filesystem::path ca;
  std::filesystem::path certificate, key;
  struct files {
    std::filesystem::path certificate, key;
  };
  std::map<std::string, files> per_node;

  /// Node `name`'s certificate and key.
  files of(const std::string& name) const {
    const auto it = per_node.find(name);
    return it != per_node.end() ? it->second : files{certificate, key};
  }
};

std::string_view to_string(time_mode m);

/// A job, as a job file describes it (runtime/job_config_toml.hpp reads one).
struct job_config {
  std::filesystem::path source;
  std::string name = "job";
  time_mode time = time_mode::virtual_time;
  bool shape_links = false; ///< wall mode: emulate the cluster's links on the sender side
  bool adapt = true;        ///< `adapt = false`: the adapter's policy never changes the plan
  std::filesystem::path cluster_path;
  runtime::cluster cluster;
  std::optional<std::filesystem::path> plan_path; ///< empty: plan = "auto"
  /// A measured profile (deepcee profile) for the planner and the simulator; with
  /// profile = "auto" this node's devices are measured at start (cached, tools/profile_run.hpp).
  std::optional<std::filesystem::path> profile_path;
  bool profile_auto = false;
  std::string model_name = "custom";
  train_config train;
  int coordinator_node = 0;     ///< index into cluster.nodes
  double connect_timeout_s = 5; ///< joining, and the coordinator's wait for every node
  /// Every node and the coordinator's node beat to each other this often; a peer unheard
  /// for heartbeat_timeout_s (> the interval) is lost: the job goes on without it where the
  /// others hold its layers, else it stops naming it.
  double heartbeat_interval_s = 0.5;
  double heartbeat_timeout_s = 3;
  /// [recovery] snapshot_every: every how many steps a plan that holds some layer on one
  /// node only snapshots its stages to peers (runtime/adapt/snapshot_plan.hpp); -1 ("auto"):
  /// the fewest steps that keep the send within 5% of the step time; 0: never.
  int snapshot_every = -1;
  /// `[inject] script = "..."`: the fluctuation and fault script the job runs under (a
  /// link timeline, runtime/io/link_timeline_toml.hpp), read against `cluster`.
  std::optional<std::filesystem::path> script_path;
  link_timeline script;
  /// [security] token_file: where `deepcee node` reads the job's token (unless a flag or
  /// the environment names one).
  std::optional<std::filesystem::path> token_file;
  /// [security] first_bytes_timeout: the seconds a new connection to a node's gate has to
  /// send its first bytes before the gate closes it (transport/gate.hpp).
  double first_bytes_timeout_s = 3;
  /// [inspect] addr: where the coordinator's node serves `deepcee inspect` ("HOST:PORT" or
  /// "off"); empty: 127.0.0.1 on an ephemeral port. inspect_line: its line, for messages.
  std::string inspect_addr;
  int64_t inspect_line = 0;
  /// [inspect] hosts: the names browsers reach the endpoint by, besides its address, this
  /// host's name and localhost (a request whose Host names another is refused).
  std::vector<std::string> inspect_hosts;
  std::optional<tls_config> tls; ///< set: nodes speak TLS 1.3 with these certificates
};

} // namespace deepcee::runtime
