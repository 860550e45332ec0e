#include "runtime/lab/lab_topology.hpp"

#include "runtime/base/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace deepcee::runtime {

namespace {

std::string node_subnet(int region) {
  return "10.99." + std::to_string(region) + ".";
}

/// The /30 of WAN path number `pair`: its two host addresses.
std::pair<std::string, std::string> wan_addresses(int pair) {
  const std::string net = "10.98." + std::to_string(pair / 64) + ".";
  const int base = 4 * (pair % 64);
  return {net + std::to_string(base + 1), net + std::to_string(base + 2)};
}

void check_size(const cluster& c, const lab_host& host, const std::string& source) {
  const int most = max_lab_nodes(host);
  if (static_cast<int>(c.nodes.size()) > most)
    fail_input(source, 0,
               "cluster '" + c.name + "' has " + std::to_string(c.nodes.size()) +
                   " nodes; this host holds a lab of at most " + std::to_string(most) +
                   " (4 per core, 256 MiB free each, at most 64)");
  if (c.regions.size() > 64)
    fail_input(source, 0, "cluster '" + c.name + "' has more than 64 regions");
}

lab_link node_link(const cluster& c, const std::string& p, int i, const lab_node& n) {
  const auto& nd = c.nodes[static_cast<size_t>(i)];
  lab_link l;
  l.what = lab_link::kind::node;
  l.from = i;
  l.to = nd.region;
  l.label = "node " + nd.name;
  l.a = {.netns = n.netns,
         .name = p + "-nic",
         .rate_Bps = nd.nic_Bps,
         .address = n.address + "/24",
         .bridge = "",
         .host_end = true};
  l.b = {.netns = p + "-r" + std::to_string(nd.region),
         .name = p + "-n" + std::to_string(i),
         .rate_Bps = nd.nic_Bps,
         .address = "",
         .bridge = p + "-br"};
  return l;
}

lab_link wan_link(const cluster& c, const std::string& p, int x, int y, int pair) {
  const auto [ax, ay] = wan_addresses(pair);
  const auto& rx = c.regions[static_cast<size_t>(x)].name;
  const auto& ry = c.regions[static_cast<size_t>(y)].name;
  lab_link l;
  l.what = lab_link::kind::wan;
  l.from = x;
  l.to = y;
  l.label = "wan " + rx + "<->" + ry;
  l.a = {.netns = p + "-r" + std::to_string(x),
         .name = p + "-w" + std::to_string(y),
         .rate_Bps = wan_rate_Bps(c, x, y),
         .address = ax + "/30",
         .bridge = ""};
  l.b = {.netns = p + "-r" + std::to_string(y),
         .name = p + "-w" + std::to_string(x),
         .rate_Bps = wan_rate_Bps(c, y, x),
         .address = ay + "/30",
         .bridge = ""};
  return l;
}

/// Each node's default route through its router; each router's route to every other
/// region through the WAN path between them.
std::vector<lab_route> routes_of(const lab_topology& t) {
  std::vector<lab_route> out;
  for (const auto& n : t.nodes)
    out.push_back({n.netns, "default", node_subnet(n.region) + "1"});
  for (const auto& l : t.links) {
    if (l.what != lab_link::kind::wan)
      continue;
    const auto via = [](const lab_port& p) { return p.address.substr(0, p.address.find('/')); };
    out.push_back({l.a.netns, node_subnet(l.to) + "0/24", via(l.b)});
    out.push_back({l.b.netns, node_subnet(l.from) + "0/24", via(l.a)});
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

} // namespace

std::vector<std::string> lab_topology::namespaces() const {
  std::vector<std::string> out;
  for (const auto& r : routers)
    out.push_back(r.netns);
  for (const auto& n : nodes)
    out.push_back(n.netns);
  return out;
}

int max_lab_nodes(const lab_host& host) {
  const int by_memory = static_cast<int>(host.memory_bytes / node_memory_bytes);
  return std::max(0, std::min({64, 4 * std::max(host.cores, 1), by_memory}));
}

void check_lab_prefix(const std::string& prefix) {
  const bool ok = !prefix.empty() && prefix.size() <= 6 && prefix[0] >= 'a' && prefix[0] <= 'z' &&
                  std::all_of(prefix.begin(), prefix.end(), [](char ch) {
                    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
                  });
  if (!ok)
    throw input_error("--prefix '" + prefix +
                      "': 1 to 6 lowercase letters and digits, starting with a letter");
}

double wan_rate_Bps(const cluster& c, int x, int y) {
  double best = 0;
  for (const auto& dx : c.devices)
    for (const auto& dy : c.devices)
      if (dx.region == x && dy.region == y)
        best = std::max(best, c.link_between(dx.id, dy.id).bandwidth_Bps);
  return best > 0 ? best : c.links.cross_region.bandwidth_Bps;
}

lab_topology plan_lab(const cluster& c, const std::string& prefix, const lab_host& host,
                      const std::vector<std::optional<double>>& cpu, const std::string& source) {
  check_lab_prefix(prefix);
  check_size(c, host, source);
  lab_topology t;
  t.prefix = prefix;
  t.cluster = c.name;
  for (size_t r = 0; r < c.regions.size(); ++r)
    t.routers.push_back({.region = c.regions[r].name,
                         .netns = prefix + "-r" + std::to_string(r),
                         .bridge = prefix + "-br",
                         .address = node_subnet(static_cast<int>(r)) + "1/24"});
  std::vector<int> in_region(c.regions.size(), 0);
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const auto& nd = c.nodes[i];
    const int host_part = 2 + in_region[static_cast<size_t>(nd.region)]++;
    t.nodes.push_back({.name = nd.name,
                       .region = nd.region,
                       .netns = prefix + "-n" + std::to_string(i),
                       .address = node_subnet(nd.region) + std::to_string(host_part),
                       .cpu_cores = i < cpu.size() ? cpu[i] : std::nullopt});
    t.links.push_back(node_link(c, prefix, static_cast<int>(i), t.nodes.back()));
  }
  int pair = 0;
  for (int x = 0; x < static_cast<int>(c.regions.size()); ++x)
    for (int y = x + 1; y < static_cast<int>(c.regions.size()); ++y)
      t.links.push_back(wan_link(c, prefix, x, y, pair++));
  t.routes = routes_of(t);
  return t;
}

tbf_settings tbf_for(double rate_Bps, bool host_end) {
  // A link of the rate passes no burst. A token bucket lets `burst` bytes through at the
  // host's speed once it has been idle: with 32 KiB at 20 Mbps, a 16 KiB message crossed at
  // once where the link takes 6.5 ms, and pipelines of small messages ran 20-30% faster
  // than the rate allows. So two full frames or 1 ms at the rate, whichever is more (the
  // kernel's tbf splits a larger TSO segment itself), and a queue of 100 ms: enough that
  // TCP fills the path, short enough that it does not add seconds.
  const double burst = std::max(2.0 * 1514, rate_Bps * 0.001);
  const double queue = std::max(2 * burst, rate_Bps * 0.1);
  return {rate_Bps, burst, host_end ? std::max(queue, host_queue_bytes) : queue};
}

std::string tc_rate(double rate_Bps) {
  return number(rate_Bps * 8) + "bit";
}

std::vector<std::string> shape_command(const lab_port& port, double rate_Bps) {
  const auto s = tbf_for(rate_Bps, port.host_end);
  return {"tc",
          "-n",
          port.netns,
          "qdisc",
          "replace",
          "dev",
          port.name,
          "root",
          "tbf",
          "rate",
          tc_rate(rate_Bps),
          "burst",
          number(s.burst_bytes),
          "limit",
          number(s.limit_bytes)};
}

std::vector<std::vector<std::string>> node_down_commands(const lab_topology& t, int node) {
  const auto& l = t.links.at(static_cast<size_t>(node)); // the nodes' links come first
  return {{"ip", "-n", l.a.netns, "link", "set", l.a.name, "down"}};
}

std::vector<std::vector<std::string>> node_up_commands(const lab_topology& t, int node) {
  const auto& l = t.links.at(static_cast<size_t>(node));
  std::vector<std::vector<std::string>> out{{"ip", "-n", l.a.netns, "link", "set", l.a.name, "up"}};
  for (const auto& r : t.routes)
    if (r.netns == l.a.netns)
      out.push_back({"ip", "-n", r.netns, "route", "replace", r.to, "via", r.via});
  return out;
}

std::vector<std::vector<std::string>> lab_build_commands(const lab_topology& t) {
  std::vector<std::vector<std::string>> out;
  for (const auto& ns : t.namespaces()) {
    out.push_back({"ip", "netns", "add", ns});
    out.push_back({"ip", "-n", ns, "link", "set", "lo", "up"});
  }
  for (const auto& r : t.routers) {
    out.push_back({"ip", "-n", r.netns, "link", "add", r.bridge, "type", "bridge"});
    out.push_back({"ip", "-n", r.netns, "addr", "add", r.address, "dev", r.bridge});
    out.push_back({"ip", "-n", r.netns, "link", "set", r.bridge, "up"});
    out.push_back({"ip", "netns", "exec", r.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"});
  }
  for (const auto& l : t.links) {
    out.push_back({"ip", "-n", l.a.netns, "link", "add", l.a.name, "type", "veth", "peer", "name",
                   l.b.name, "netns", l.b.netns});
    for (const auto* p : {&l.a, &l.b}) {
      if (!p->bridge.empty())
        out.push_back({"ip", "-n", p->netns, "link", "set", p->name, "master", p->bridge});
      if (!p->address.empty())
        out.push_back({"ip", "-n", p->netns, "addr", "add", p->address, "dev", p->name});
      out.push_back({"ip", "-n", p->netns, "link", "set", p->name, "up"});
      if (p->rate_Bps)
        out.push_back(shape_command(*p, *p->rate_Bps));
    }
  }
  for (const auto& r : t.routes)
    out.push_back({"ip", "-n", r.netns, "route", "add", r.to, "via", r.via});
  return out;
}

} // namespace deepcee::runtime
