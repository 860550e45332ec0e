#include "tools/lab_network.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/lab/lab_script.hpp"
#include "tools/lab_exec.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path cgroup_v1_cpu = "/sys/fs/cgroup/cpu";
const fs::path cgroup_root = "/sys/fs/cgroup";

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv)
    out += (out.empty() ? "" : " ") + a;
  return out;
}

/// Where this host lets the lab make a CPU cgroup: v1's cpu hierarchy, or v2's root when it
/// offers the cpu controller to its children. Empty: neither.
std::pair<fs::path, bool> cgroup_parent() {
  if (fs::exists(cgroup_v1_cpu / "cpu.cfs_quota_us"))
    return {cgroup_v1_cpu, false};
  std::ifstream controllers(cgroup_root / "cgroup.subtree_control");
  std::string word;
  while (controllers >> word)
    if (word == "cpu")
      return {cgroup_root, true};
  return {{}, false};
}

/// The nodes' cgroups, made now; none where the host offers no CPU controller.
void make_cgroups(lab_state& s) {
  const auto [parent, v2] = cgroup_parent();
  if (parent.empty())
    return;
  s.cgroup_v2 = v2;
  for (const auto& n : s.topology.nodes) {
    const auto dir = parent / n.netns;
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (ec) {
      s.cgroups.clear();
      return;
    }
    s.cgroups.push_back(dir.string());
  }
  for (size_t i = 0; i < s.topology.nodes.size(); ++i)
    set_cpu_limit(s, static_cast<int>(i), s.topology.nodes[i].cpu_cores);
}

/// Kills every process in the namespace (ip netns pids) and waits until none is left.
void kill_namespace_processes(const lab_context& ctx, const std::string& ns) {
  for (int round = 0; round < 50; ++round) {
    const auto pids = run_program({"ip", "netns", "pids", ns}, ctx.path);
    std::stringstream in(pids.output);
    int pid = 0, killed = 0;
    while (in >> pid) {
      ::kill(pid, SIGKILL);
      ++killed;
    }
    if (killed == 0 || pids.status != 0)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void remove_cgroups(const lab_context& ctx) {
  const auto [parent, v2] = cgroup_parent();
  if (parent.empty())
    return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec))
    if (e.is_directory() && e.path().filename().string().starts_with(ctx.prefix + "-n"))
      for (int tries = 0; tries < 50 && ::rmdir(e.path().c_str()) != 0; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

/// One line on what the lab does not shape: netem's latency, jitter and loss.
std::string left_out_line(const lab_context& ctx, const runtime::lab_topology& t) {
  const auto& ns = t.routers.empty() ? t.nodes.at(0).netns : t.routers[0].netns;
  const auto probe = run_program(
      {"tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"}, ctx.path);
  if (probe.status == 0) {
    run_program({"tc", "-n", ns, "qdisc", "del", "dev", "lo", "root"}, ctx.path);
    return "lab " + ctx.prefix + ": link latencies are left out (the lab shapes bandwidth only)";
  }
  return "lab " + ctx.prefix +
         ": this kernel has no netem: link latencies, jitter and loss are left out (bandwidth is "
         "shaped with tbf)";
}

} // namespace

void check_lab_tools(const lab_context& ctx) {
  for (const char* tool : {"ip", "tc"})
    if (!find_program(tool, ctx.path))
      throw runtime::input_error(std::string("'") + tool +
                                 "' is not on PATH: the lab needs iproute2 (ip and tc)");
  if (!has_net_admin())
    throw runtime::input_error(
        "the lab needs root (CAP_NET_ADMIN) to make namespaces, veth pairs and qdiscs");
}

void run_checked(const lab_context& ctx, const std::vector<std::string>& cmd) {
  const auto r = run_program(cmd, ctx.path);
  if (r.status != 0)
    throw std::runtime_error("'" + joined(cmd) + "' failed: " + r.output);
}

std::vector<std::string> lab_namespaces(const lab_context& ctx) {
  const auto r = run_program({"ip", "netns", "list"}, ctx.path);
  std::vector<std::string> out;
  std::stringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    const auto name = line.substr(0, line.find(' '));
    if (name.starts_with(ctx.prefix + "-"))
      out.push_back(name);
  }
  return out;
}

std::string lab_up(const lab_context& ctx, const runtime::lab_topology& t,
                   const std::string& cluster_file) {
  const auto file = lab_state_file(ctx.state_dir, ctx.prefix);
  if (fs::exists(file) || !lab_namespaces(ctx).empty())
    throw runtime::input_error("a lab is already up under prefix '" + ctx.prefix +
                               "' (deepcee lab down --prefix " + ctx.prefix + ")");
  lab_state s;
  s.topology = t;
  s.cluster_file = cluster_file;
  try {
    for (const auto& cmd : runtime::lab_build_commands(t))
      run_checked(ctx, cmd);
    make_cgroups(s);
    save_lab_state(s, file);
  } catch (...) {
    lab_down(ctx);
    throw;
  }
  return left_out_line(ctx, t);
}

int lab_down(const lab_context& ctx) {
  const auto namespaces = lab_namespaces(ctx);
  for (const auto& ns : namespaces)
    kill_namespace_processes(ctx, ns);
  for (const auto& ns : namespaces)
    run_program({"ip", "netns", "del", ns}, ctx.path);
  remove_cgroups(ctx);
  std::error_code ec;
  fs::remove(lab_state_file(ctx.state_dir, ctx.prefix), ec);
  return static_cast<int>(namespaces.size());
}

port_reading read_port(const lab_context& ctx, const runtime::lab_port& p) {
  port_reading r;
  const auto link =
      run_program({"ip", "-n", p.netns, "-j", "-s", "link", "show", "dev", p.name}, ctx.path);
  const auto qdisc =
      run_program({"tc", "-n", p.netns, "-j", "qdisc", "show", "dev", p.name}, ctx.path);
  if (link.status != 0 || qdisc.status != 0)
    throw std::runtime_error("cannot read " + p.netns + "/" + p.name + ": " + link.output +
                             qdisc.output);
  r.read_at_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const auto l = json::parse(link.output).at(0);
  r.tx_bytes = l.at("stats64").at("tx").at("bytes").get<double>();
  r.rx_bytes = l.at("stats64").at("rx").at("bytes").get<double>();
  r.up = l.value("operstate", "") != "DOWN" &&
         std::count(l.at("flags").begin(), l.at("flags").end(), "UP") > 0;
  for (const auto& q : json::parse(qdisc.output))
    if (q.value("kind", "") == "tbf" && q.value("root", false))
      r.rate_Bps = q.at("options").at("rate").get<double>();
  return r;
}

bool set_cpu_limit(const lab_state& s, int node, std::optional<double> cores) {
  if (s.cgroups.empty())
    return false;
  const fs::path dir = s.cgroups.at(static_cast<size_t>(node));
  const long long period = 100000;
  const auto quota = runtime::cpu_quota_us(cores, period);
  if (s.cgroup_v2)
    std::ofstream(dir / "cpu.max")
        << (quota < 0 ? std::string("max") : std::to_string(quota)) << " " << period << "\n";
  else {
    std::ofstream(dir / "cpu.cfs_period_us") << period << "\n";
    std::ofstream(dir / "cpu.cfs_quota_us") << quota << "\n";
  }
  return true;
}

} // namespace deepcee::tools
