// deepcee lab up|run|profile|status|down: a cluster file made into a real network on this
// host (one network namespace per node, shaped veth pairs, one WAN path per region pair: see
// runtime/lab/lab_topology.hpp), a job run or profiled on it, its script applied for real.
#include "runtime/base/errors.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/lab/lab_topology.hpp"
#include "tools/commands.hpp"
#include "tools/lab_exec.hpp"
#include "tools/lab_network.hpp"
#include "tools/lab_profile.hpp"
#include "tools/lab_run.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace deepcee::tools {

namespace {

struct lab_options {
  std::string prefix = "dcl";
  std::string state_dir = default_lab_state_dir;
  std::string cluster;
  std::vector<std::string> cpu; ///< NODE=CORES
  lab_run_options run;
  lab_profile_options profile;
};

/// --cpu NODE=CORES as a limit per node index.
std::vector<std::optional<double>> cpu_limits(const runtime::cluster& c,
                                              const std::vector<std::string>& specs) {
  std::vector<std::optional<double>> out(c.nodes.size());
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    const auto node = c.find_node(spec.substr(0, eq));
    double cores = 0;
    try {
      cores = eq == std::string::npos ? 0 : std::stod(spec.substr(eq + 1));
    } catch (const std::exception&) {
    }
    if (!node || !(cores > 0))
      throw runtime::input_error("--cpu '" + spec + "': give NODE=CORES with a node of cluster '" +
                                 c.name + "' and a positive number of cores");
    out[static_cast<size_t>(*node)] = cores;
  }
  return out;
}

std::string rate_text(std::optional<double> rate_Bps) {
  if (!rate_Bps)
    return "unshaped";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g Mbit/s", *rate_Bps * 8 / 1e6);
  return buf;
}

int up(const lab_context& ctx, const lab_options& o) {
  check_lab_tools(ctx);
  runtime::check_lab_prefix(ctx.prefix);
  const auto c = runtime::load_cluster(o.cluster);
  const auto facts = read_host_facts();
  const auto t = runtime::plan_lab(c, ctx.prefix, {facts.cores, facts.memory_bytes},
                                   cpu_limits(c, o.cpu), o.cluster);
  const auto left_out = lab_up(ctx, t, std::filesystem::absolute(o.cluster).string());
  for (const auto& n : t.nodes)
    std::printf("node %s: namespace %s, address %s\n", n.name.c_str(), n.netns.c_str(),
                n.address.c_str());
  for (const auto& l : t.links)
    std::printf("%s: %s out, %s in\n", l.label.c_str(), rate_text(l.a.rate_Bps).c_str(),
                rate_text(l.b.rate_Bps).c_str());
  std::printf("%s\nlab %s is up (deepcee lab status/run/down --prefix %s)\n", left_out.c_str(),
              ctx.prefix.c_str(), ctx.prefix.c_str());
  return 0;
}

/// One row of `lab status`: what the port sends now (its bytes between two readings) beside
/// its rates, counters and state.
void print_port(const std::string& label, const runtime::lab_port& p, const port_reading& before,
                const port_reading& r) {
  const double sending = (r.tx_bytes - before.tx_bytes) / (r.read_at_s - before.read_at_s);
  std::printf("%-26s %-20s %11s %11s %11s %14.0f %14.0f %s\n", label.c_str(),
              (p.netns + "/" + p.name).c_str(), rate_text(p.rate_Bps).c_str(),
              rate_text(r.rate_Bps).c_str(), rate_text(sending).c_str(), r.tx_bytes, r.rx_bytes,
              r.up ? "up" : "DOWN");
}

/// Every port of the lab, read now.
std::vector<port_reading> read_ports(const lab_context& ctx, const runtime::lab_topology& t) {
  std::vector<port_reading> out;
  for (const auto& l : t.links)
    for (const auto* p : {&l.a, &l.b})
      out.push_back(read_port(ctx, *p));
  return out;
}

int status(const lab_context& ctx) {
  check_lab_tools(ctx);
  const auto s = load_lab_state(lab_state_file(ctx.state_dir, ctx.prefix), ctx.prefix);
  std::printf("lab %s: cluster '%s' (%s), %zu nodes, %zu namespaces up\n", ctx.prefix.c_str(),
              s.topology.cluster.c_str(), s.cluster_file.c_str(), s.topology.nodes.size(),
              lab_namespaces(ctx).size());
  for (const auto& n : s.topology.nodes)
    std::printf("node %-12s %-10s %-12s cpu %s\n", n.name.c_str(), n.netns.c_str(),
                n.address.c_str(),
                n.cpu_cores ? (std::to_string(*n.cpu_cores) + " cores").c_str() : "unlimited");
  const auto before = read_ports(ctx, s.topology);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto after = read_ports(ctx, s.topology);
  std::printf("%-26s %-20s %11s %11s %11s %14s %14s %s\n", "path (direction)", "port", "set",
              "tc now", "sending", "tx bytes", "rx bytes", "state");
  size_t k = 0;
  for (const auto& l : s.topology.links) {
    const bool wan = l.what == runtime::lab_link::kind::wan;
    print_port(l.label + (wan ? " (->)" : " (out)"), l.a, before[k], after[k]);
    print_port(l.label + (wan ? " (<-)" : " (in)"), l.b, before[k + 1], after[k + 1]);
    k += 2;
  }
  return 0;
}

int down(const lab_context& ctx) {
  check_lab_tools(ctx);
  runtime::check_lab_prefix(ctx.prefix);
  const int removed = lab_down(ctx);
  if (removed == 0)
    std::printf("lab %s: nothing to remove\n", ctx.prefix.c_str());
  else
    std::printf("lab %s: removed %d namespaces and the processes in them\n", ctx.prefix.c_str(),
                removed);
  return 0;
}

void add_common(CLI::App* cmd, lab_options& o) {
  cmd->add_option("--prefix", o.prefix,
                  "Prefix of every namespace, interface and cgroup of the lab (1-6 of a-z0-9)")
      ->capture_default_str();
  cmd->add_option("--state-dir", o.state_dir, "Where the lab's state file is kept")
      ->capture_default_str();
}

} // namespace

command_action add_lab_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<lab_options>();
  CLI::App* cmd = app.add_subcommand(
      "lab", "A real network on this host for a cluster file: namespaces, shaped links (root)");
  cmd->require_subcommand(1);
  auto* up_cmd = cmd->add_subcommand("up", "Build the lab of a cluster file");
  up_cmd->add_option("cluster", o->cluster, "Cluster file (TOML)")->required();
  up_cmd->add_option("--cpu", o->cpu, "NODE=CORES: limit a node's CPU (repeatable)");
  auto* run_cmd = cmd->add_subcommand(
      "run", "Run every node of a job in the lab, its [inject] script applied to the lab");
  run_cmd->add_option("job", o->run.job, "Job file (TOML) on the lab's cluster")->required();
  run_cmd->add_option("--out", o->run.out, "Run directory (logs, derived job, lab-events.csv)");
  run_cmd->add_option("node_options", o->run.node_options,
                      "After --: options given to every `deepcee node`");
  auto* profile_cmd = cmd->add_subcommand(
      "profile", "Run deepcee profile on every node of a job in the lab: its links as shaped");
  profile_cmd->add_option("job", o->profile.job, "Job file (TOML) on the lab's cluster")
      ->required();
  profile_cmd->add_option("--profile", o->profile.profile, "Profile file to write (TOML)")
      ->required();
  profile_cmd->add_option("--out", o->profile.out, "Run directory (logs, derived job)");
  profile_cmd->add_option("profile_options", o->profile.profile_options,
                          "After --: options given to every `deepcee profile`");
  auto* status_cmd = cmd->add_subcommand("status", "Rates and byte counters of the lab's paths");
  auto* down_cmd = cmd->add_subcommand("down", "Remove the lab (idempotent)");
  for (auto* sub : {up_cmd, run_cmd, profile_cmd, status_cmd, down_cmd})
    add_common(sub, *o);
  return [o, up_cmd, run_cmd, profile_cmd, status_cmd, env] {
    const lab_context ctx{env.path, o->state_dir, o->prefix};
    if (up_cmd->parsed())
      return up(ctx, *o);
    if (run_cmd->parsed()) {
      check_lab_tools(ctx);
      runtime::check_lab_prefix(ctx.prefix);
      return lab_run(ctx, o->run, env.token);
    }
    if (profile_cmd->parsed()) {
      check_lab_tools(ctx);
      return lab_profile(ctx, o->profile, env.token);
    }
    if (status_cmd->parsed())
      return status(ctx);
    return down(ctx);
  };
}

} // namespace deepcee::tools
