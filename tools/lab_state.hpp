#pragma once

#include "runtime/lab/lab_topology.hpp"

#include <filesystem>
#include <optional>
#include <string>

/// What `deepcee lab up` leaves for run, status and down: the lab's topology and where its
/// nodes' CPU cgroups are, in one small JSON file per prefix (`STATE_DIR/PREFIX.json`).
namespace deepcee::tools {

struct lab_state {
  runtime::lab_topology topology;
  std::string cluster_file;
  /// The cgroup directory of each node (same order as topology.nodes); empty when the host
  /// has no CPU controller this lab can use.
  std::vector<std::string> cgroups;
  bool cgroup_v2 = false;
};

inline constexpr const char* default_lab_state_dir = "/run/deepcee-lab";

std::filesystem::path lab_state_file(const std::filesystem::path& dir, const std::string& prefix);
void save_lab_state(const lab_state& s, const std::filesystem::path& file);
/// Throws input_error "no lab is up under prefix P (FILE)" when there is no file.
lab_state load_lab_state(const std::filesystem::path& file, const std::string& prefix);

} // namespace deepcee::tools
