#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

/// How `deepcee lab` runs programs: fork and exec with an argv, never a shell line, so no
/// name from a file or the command line is ever parsed by a shell.
namespace deepcee::tools {

struct exec_result {
  int status = -1;    ///< the exit code, or 128 + the signal
  std::string output; ///< stdout and stderr together
};

/// Runs `argv` (argv[0] looked up in `path`), waits, returns its exit code and output.
exec_result run_program(const std::vector<std::string>& argv, const std::string& path);

/// `name` found in the directories of `path` (PATH's form), executable.
std::optional<std::filesystem::path> find_program(const std::string& name, const std::string& path);

/// Starts `argv` in the background, its stdout and stderr to `log`, its pid first written to
/// `cgroup_procs` (when given) so every thread it makes is in that cgroup. Returns the pid.
int spawn_program(const std::vector<std::string>& argv, const std::filesystem::path& log,
                  const std::optional<std::filesystem::path>& cgroup_procs);

/// Whether this process holds CAP_NET_ADMIN (as root does).
bool has_net_admin();

/// The host's cores and available memory in bytes.
struct host_facts {
  int cores = 1;
  double memory_bytes = 0;
};
host_facts read_host_facts();

} // namespace deepcee::tools
