#include "tools/lab_job.hpp"

#include "runtime/base/errors.hpp"
#include "tools/lab_exec.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

namespace deepcee::tools {

namespace fs = std::filesystem;

namespace {

/// Makes a path key of `t` absolute against `dir` (the job file's folder).
void absolute_key(toml::table& t, const char* key, const fs::path& dir) {
  auto* v = t.get_as<std::string>(key);
  if (!v || v->get().empty() || v->get() == "auto" || fs::path(v->get()).is_absolute())
    return;
  v->get() = (dir / v->get()).lexically_normal().string();
}

} // namespace

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
  std::ofstream(out) << "# Written by deepcee lab from " << fs::absolute(job_file).string()
                     << ": the nodes at their lab addresses, the script left to the lab.\n"
                     << root << "\n";
  return out;
}

namespace {

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

} // namespace

bool has_option(const std::vector<std::string>& opts, const std::string& name) {
  return std::find(opts.begin(), opts.end(), name) != opts.end();
}

std::vector<std::string> with_token(std::vector<std::string> extra, const runtime::job_config& job,
                                    const runtime::token_environment& token_env,
                                    const fs::path& run_dir) {
  if (!has_option(extra, "--insecure") && !has_option(extra, "--token-file") && !job.token_file &&
      !token_env.token_file && !token_env.token)
    extra.insert(extra.end(), {"--token-file", make_token(run_dir).string()});
  return extra;
}

std::vector<running_node>
start_in_lab(const lab_context& ctx, const lab_state& s, const fs::path& run_dir,
             const std::string& what, const std::function<std::vector<std::string>(size_t)>& args) {
  const auto ip = find_program("ip", ctx.path)->string();
  const auto self = fs::read_symlink("/proc/self/exe").string();
  std::vector<running_node> out;
  for (size_t i = 0; i < s.topology.nodes.size(); ++i) {
    const auto& n = s.topology.nodes[i];
    std::vector<std::string> argv{ip, "netns", "exec", n.netns, self};
    const auto tail = args(i);
    argv.insert(argv.end(), tail.begin(), tail.end());
    std::optional<fs::path> procs;
    if (!s.cgroups.empty())
      procs = fs::path(s.cgroups[i]) / "cgroup.procs";
    const auto log = run_dir / (n.name + ".log");
    out.push_back({n.name, spawn_program(argv, log, procs), -1, log});
    std::printf("%s: node %s in %s at %s (log %s)\n", what.c_str(), n.name.c_str(), n.netns.c_str(),
                n.address.c_str(), log.string().c_str());
  }
  std::fflush(stdout);
  return out;
}

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

} // namespace deepcee::tools
