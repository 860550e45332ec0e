#pragma once

#include "runtime/io/job_token.hpp"
#include "runtime/plan/job_config.hpp"
#include "tools/lab_network.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

/// What `deepcee lab run` and `deepcee lab profile` share: a job checked against the lab, the
/// job file its nodes read (at their lab addresses), and one process per node started in
/// its namespace and CPU cgroup.
namespace deepcee::tools {

/// Throws input_error unless the job's cluster has the lab's nodes, in its order and regions.
void check_job_fits(const runtime::job_config& job, const lab_state& s, const std::string& file);

/// The job file the nodes read: the user's, with every [[node]] at its lab address, the
/// files it names made absolute, and no [inject] (the lab applies the script; the job is
/// not told). Written to RUN_DIR/job.toml.
std::filesystem::path derived_job(const std::string& job_file, const runtime::job_config& job,
                                  const lab_state& s, const std::filesystem::path& run_dir);

/// `extra` with `--token-file RUN_DIR/token` (a fresh token, readable by this user only)
/// added, unless the options, the job or the environment already give a token.
std::vector<std::string> with_token(std::vector<std::string> extra, const runtime::job_config& job,
                                    const runtime::token_environment& token_env,
                                    const std::filesystem::path& run_dir);

bool has_option(const std::vector<std::string>& opts, const std::string& name);

struct running_node {
  std::string name;
  int pid = 0;
  int status = -1;
  std::filesystem::path log;
};

/// Starts `deepcee ARGS(i)` for every node i of the lab, in its namespace and cgroup, its
/// output in RUN_DIR/NODE.log; prints one line each, starting with `what`.
std::vector<running_node> start_in_lab(const lab_context& ctx, const lab_state& s,
                                       const std::filesystem::path& run_dir,
                                       const std::string& what,
                                       const std::function<std::vector<std::string>(size_t)>& args);

/// Reaps the nodes that ended; returns whether any is still running.
bool reap(std::vector<running_node>& nodes);

/// `sig` to every node still running (SIGCONT first, so that a stopped one can end).
void signal_all(const std::vector<running_node>& nodes, int sig);

} // namespace deepcee::tools
