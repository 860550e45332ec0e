#include "tools/lab_run.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "tools/interrupt_flag.hpp"
#include "tools/lab_exec.hpp"
#include "tools/lab_inject.hpp"
#include "tools/lab_job.hpp"
#include "tools/run_directory.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace deepcee::tools {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

/// The steps the coordinator has written to its metrics CSV so far (the last whole row's
/// step), read from the header and the file's last 4 KiB.
int steps_done(const fs::path& csv) {
  std::ifstream in(csv);
  std::string header, line, last;
  if (!std::getline(in, header))
    return 0;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(in.tellg());
  const auto from =
      std::max<std::streamoff>(static_cast<std::streamoff>(header.size()) + 1, size - 4096);
  in.seekg(from);
  if (from > static_cast<std::streamoff>(header.size()) + 1)
    std::getline(in, line); // a partial row
  while (std::getline(in, line))
    if (!line.empty() && !in.eof()) // a row without its newline is still being written
      last = line;
  std::stringstream h(header), l(last);
  std::string name, value;
  while (std::getline(h, name, ',') && std::getline(l, value, ','))
    if (name == "step")
      return std::atoi(value.c_str());
  return 0;
}

/// Waits for every node, applying the script meanwhile. A member that ends early (killed,
/// or out of the job after a partition) is the job's to answer: it goes on without it where
/// it can. Once the coordinator's node (`coordinator`, by index) has ended, the others get
/// 15 s to end (the job's end ends them); Ctrl-C passes SIGINT on and gives them 60 s; then
/// SIGKILL.
void supervise(std::vector<running_node>& nodes, size_t coordinator, lab_injector& inject,
               const fs::path& csv) {
  interrupt_flag interrupted;
  const auto start = clock_type::now();
  std::optional<clock_type::time_point> deadline;
  bool forwarded = false;
  while (reap(nodes)) {
    std::vector<int> pids;
    for (const auto& n : nodes)
      pids.push_back(n.pid);
    const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    inject.poll(elapsed, steps_done(csv), pids);
    const bool ended = nodes.at(coordinator).pid == 0;
    if (interrupted.raised() && !forwarded) {
      signal_all(nodes, SIGINT);
      forwarded = true;
      deadline = clock_type::now() + std::chrono::seconds(60);
    }
    if (ended && !deadline)
      deadline = clock_type::now() + std::chrono::seconds(15);
    if (deadline && clock_type::now() > *deadline)
      signal_all(nodes, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace

int lab_run(const lab_context& ctx, const lab_run_options& o,
            const runtime::token_environment& token_env) {
  const auto state = load_lab_state(lab_state_file(ctx.state_dir, ctx.prefix), ctx.prefix);
  for (const char* own : {"--out", "--metrics", "--name"})
    if (has_option(o.node_options, own))
      throw runtime::input_error(std::string("lab run sets the nodes' ") + own +
                                 " itself: use lab run --out for the run directory");
  const auto job = runtime::load_job_config(o.job);
  if (job.time != runtime::time_mode::wall || job.shape_links)
    runtime::fail_input(o.job, 0,
                        "a lab runs jobs in time = \"wall\" without shape_links (in virtual "
                        "and dry time, and with shaped links, the job models the network itself)");
  check_job_fits(job, state, o.job);
  const auto script = job.script_path ? job.script_path->string() : o.job;
  auto events = runtime::lab_events(job.script, job.cluster, state.topology, script);
  const auto run_dir = make_run_directory(o.out, job.train.out, "lab");
  const auto job_file = derived_job(o.job, job, state, run_dir);
  const auto extra = with_token(o.node_options, job, token_env, run_dir);
  const auto csv = run_dir / "job" / "metrics.csv";
  lab_injector inject(ctx, state, std::move(events), run_dir / "lab-events.csv");
  auto nodes = start_in_lab(ctx, state, run_dir, "lab run", [&](size_t i) {
    std::vector<std::string> args{"node", job_file.string(), "--name",
                                  state.topology.nodes[i].name};
    if (static_cast<int>(i) == job.coordinator_node)
      args.insert(args.end(), {"--out", (run_dir / "job").string(), "--metrics", "csv"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  });
  const auto& boss = job.cluster.nodes.at(static_cast<size_t>(job.coordinator_node)).name;
  const auto coordinator = static_cast<size_t>(
      std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.name == boss; }) -
      nodes.begin());
  try {
    supervise(nodes, coordinator, inject, csv);
  } catch (...) { // an event the lab could not apply: no node outlives lab run
    signal_all(nodes, SIGKILL);
    while (reap(nodes))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    inject.restore();
    throw;
  }
  inject.restore();
  for (const auto& n : nodes)
    std::printf("node %s: exit %d (log %s)\n", n.name.c_str(), n.status, n.log.string().c_str());
  // The job's outcome is its coordinator's node's: members lost on the way do not fail it.
  const int status = nodes.at(coordinator).status;
  const int rc = status == 0 || status == 130 ? status : 1;
  std::printf("lab run: %s (events: %s)\n", run_dir.string().c_str(),
              (run_dir / "lab-events.csv").string().c_str());
  return rc;
}

} // namespace deepcee::tools
