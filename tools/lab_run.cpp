#include "tools/lab_run.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "tools/interrupt_flag.hpp"
#include "tools/lab_exec.hpp"
#include "tools/lab_inject.hpp"
#include "tools/run_directory.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace deepcee::tools {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

/// Throws input_error unless the job's cluster has the lab's nodes, in its order and regions.
void check_job_fits(const runtime::job_config& job, const lab_state& s, const std::string& file) {
  const auto& lab = s.topology;
  bool same = job.cluster.nodes.size() == lab.nodes.size();
  for (size_t i = 0; same && i < lab.nodes.size(); ++i)
    same = job.cluster.nodes[i].name == lab.nodes[i].name &&
           job.cluster.regions.at(static_cast<size_t>(job.cluster.nodes[i].region)).name ==
               lab.routers.at(static_cast<size_t>(lab.nodes[i].region)).region;
  if (!same)
    runtime::fail_input(file, 0,
                        "the job's nodes (cluster '" + job.cluster.name +
                            "') are not the lab's (cluster '" + lab.cluster + "', from " +
                            s.cluster_file + "): bring up a lab of the job's cluster");
}

/// Makes a path key of `t` absolute against `dir` (the job file's folder).
void absolute_key(toml::table& t, const char* key, const fs::path& dir) {
  auto* v = t.get_as<std::string>(key);
  if (!v || v->get().empty() || v->get() == "auto" || fs::path(v->get()).is_absolute())
    return;
  v->get() = (dir / v->get()).lexically_normal().string();
}

/// The job file the nodes run: the user's, with every [[node]] at its lab address, the
/// files it names made absolute, and no [inject] (the lab applies the script; the job is
/// not told).
fs::path derived_job(const std::string& job_file, const runtime::job_config& job,
                     const lab_state& s, const fs::path& run_dir) {
  auto root = toml::parse_file(job_file);
  const auto dir = fs::absolute(job_file).parent_path();
  for (const char* key : {"cluster", "plan", "profile"})
    absolute_key(root, key, dir);
  if (auto* sec = root.get_as<toml::table>("security"))
    for (const char* key : {"token_file", "certificate", "key", "ca"})
      absolute_key(*sec, key, dir);
  root.erase("inject");
  toml::array nodes;
  for (size_t i = 0; i < s.topology.nodes.size(); ++i) {
    const auto& n = job.cluster.nodes[i];
    toml::table t{{"name", n.name},
                  {"host", s.topology.nodes[i].address},
                  {"port", n.port > 0 ? n.port : 29400 + static_cast<int>(i)}};
    if (const auto* old = root.get_as<toml::array>("node"))
      for (const auto& e : *old)
        if (const auto* ot = e.as_table(); ot && ot->get_as<std::string>("name") &&
                                           ot->get_as<std::string>("name")->get() == n.name)
          for (const char* key : {"certificate", "key"})
            if (const auto* v = ot->get_as<std::string>(key)) {
              t.insert(key, v->get());
              absolute_key(t, key, dir);
            }
    nodes.push_back(std::move(t));
  }
  root.insert_or_assign("node", std::move(nodes));
  const auto out = run_dir / "job.toml";
  std::ofstream(out) << "# Written by deepcee lab run from " << fs::absolute(job_file).string()
                     << ": the nodes at their lab addresses, the script left to the lab.\n"
                     << root << "\n";
  return out;
}

/// A fresh token for the run, readable by this user only.
fs::path make_token(const fs::path& run_dir) {
  const auto file = run_dir / "token";
  std::random_device rd;
  std::string hex;
  for (int i = 0; i < 32; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", rd() & 0xff);
    hex += b;
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ::write(fd, hex.data(), hex.size()) != static_cast<ssize_t>(hex.size()))
    throw std::runtime_error("cannot write " + file.string());
  ::close(fd);
  return file;
}

bool has_option(const std::vector<std::string>& opts, const std::string& name) {
  return std::find(opts.begin(), opts.end(), name) != opts.end();
}

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

struct running_node {
  std::string name;
  int pid = 0;
  int status = -1;
  fs::path log;
};

std::vector<running_node> start_nodes(const lab_context& ctx, const lab_state& s,
                                      const runtime::job_config& job, const fs::path& job_file,
                                      const fs::path& run_dir, std::vector<std::string> extra) {
  const auto ip = find_program("ip", ctx.path)->string();
  const auto self = fs::read_symlink("/proc/self/exe").string();
  std::vector<running_node> out;
  for (size_t i = 0; i < s.topology.nodes.size(); ++i) {
    const auto& n = s.topology.nodes[i];
    std::vector<std::string> argv{ip,     "netns",           "exec",   n.netns, self,
                                  "node", job_file.string(), "--name", n.name};
    if (static_cast<int>(i) == job.coordinator_node)
      argv.insert(argv.end(), {"--out", (run_dir / "job").string(), "--metrics", "csv"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::optional<fs::path> procs;
    if (!s.cgroups.empty())
      procs = fs::path(s.cgroups[i]) / "cgroup.procs";
    const auto log = run_dir / (n.name + ".log");
    out.push_back({n.name, spawn_program(argv, log, procs), -1, log});
    std::printf("lab run: node %s in %s at %s (log %s)\n", n.name.c_str(), n.netns.c_str(),
                n.address.c_str(), log.string().c_str());
  }
  std::fflush(stdout);
  return out;
}

/// Reaps the nodes that ended; returns whether any is still running.
bool reap(std::vector<running_node>& nodes) {
  bool alive = false;
  for (auto& n : nodes) {
    if (n.pid <= 0)
      continue;
    int raw = 0;
    if (::waitpid(n.pid, &raw, WNOHANG) == n.pid) {
      n.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      n.pid = 0;
    } else
      alive = true;
  }
  return alive;
}

void signal_all(const std::vector<running_node>& nodes, int sig) {
  for (const auto& n : nodes)
    if (n.pid > 0) {
      ::kill(n.pid, SIGCONT); // a stopped node must run to end
      ::kill(n.pid, sig);
    }
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
  auto extra = o.node_options;
  if (!has_option(extra, "--insecure") && !has_option(extra, "--token-file") && !job.token_file &&
      !token_env.token_file && !token_env.token)
    extra.insert(extra.end(), {"--token-file", make_token(run_dir).string()});
  const auto csv = run_dir / "job" / "metrics.csv";
  lab_injector inject(ctx, state, std::move(events), run_dir / "lab-events.csv");
  auto nodes = start_nodes(ctx, state, job, job_file, run_dir, extra);
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
