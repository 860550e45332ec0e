#pragma once

#include "tools/lab_state.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

/// The effects of `deepcee lab`: building, reading and removing a lab with ip and tc (all
/// through run_program: argv, never a shell line), and the nodes' CPU cgroups.
namespace deepcee::tools {

/// What every lab command needs: where PATH and the state directory are, and the prefix.
struct lab_context {
  std::string path; ///< PATH
  std::filesystem::path state_dir;
  std::string prefix;
};

/// Throws input_error naming what is missing: ip or tc not on PATH, or no CAP_NET_ADMIN.
void check_lab_tools(const lab_context& ctx);

/// Builds `t` (rolling back everything with the prefix on the first failure, which it then
/// throws), sets up the nodes' cgroups and saves the state. Throws input_error when a lab is
/// already up under the prefix. Returns the line on what the lab leaves out (latency).
std::string lab_up(const lab_context& ctx, const runtime::lab_topology& t,
                   const std::string& cluster_file);

/// Removes every namespace (and every process in it), cgroup and state file of the prefix.
/// Returns how many namespaces it removed; 0 when there was no lab.
int lab_down(const lab_context& ctx);

/// The lab's namespaces that exist now (those named PREFIX-...).
std::vector<std::string> lab_namespaces(const lab_context& ctx);

/// One port's configured rate and counters, as ip and tc report them now.
struct port_reading {
  std::optional<double> rate_Bps; ///< the tbf's rate; unset: none
  double tx_bytes = 0;
  double rx_bytes = 0;
  bool up = false;
  double read_at_s = 0; ///< when the counters were read (a steady clock)
};
port_reading read_port(const lab_context& ctx, const runtime::lab_port& p);

/// Applies `cmd` (an ip or tc argv); throws std::runtime_error with its output on failure.
void run_checked(const lab_context& ctx, const std::vector<std::string>& cmd);

/// Writes a CPU limit (unset: none) to a node's cgroup. Returns false when there is none.
bool set_cpu_limit(const lab_state& s, int node, std::optional<double> cores);

} // namespace deepcee::tools
