#pragma once

#include "runtime/cluster/cluster.hpp"

#include <optional>
#include <string>
#include <vector>

/// A network lab: a cluster file made into a real network on one Linux host, as values.
/// Nothing here runs a command; tools/lab_*.cpp runs what these functions return.
///
///     node ns (P-n0)           region router ns (P-r0)           region router ns (P-r1)
///     P-nic 10.99.0.2 ==veth== P-n0 --+                                 +-- P-n2 ==veth== ...
///                                     P-br 10.99.0.1   P-w1 ==veth== P-w0  P-br 10.99.1.1
///     P-nic 10.99.0.3 ==veth== P-n1 --+  (bridge)                       (bridge)
///
/// Every node gets a namespace and one interface, shaped to its `nic` each way: leaving the
/// node on its own end, entering it on the router's end. Each region gets a router namespace
/// whose bridge joins its nodes. Each region pair gets one veth pair between the two routers,
/// the WAN path, shaped each way to the file's bandwidth across it: every node pair that
/// crosses it shares it (runtime/cluster/network_path.hpp). Static routes join the regions.
/// Every name carries the prefix P, so a lab is found and removed by its prefix alone.
namespace deepcee::runtime {

/// One end of a veth pair: where it lives, its name, and what its egress is shaped to
/// (unset: unshaped).
struct lab_port {
  std::string netns;
  std::string name;
  std::optional<double> rate_Bps;
  std::string address;   ///< CIDR, or empty
  std::string bridge;    ///< the bridge it is enslaved to, or empty
  bool host_end = false; ///< a node's own end of its interface: what its sockets send
  friend bool operator==(const lab_port&, const lab_port&) = default;
};

/// A veth pair. A node's: `a` in the node, `b` in its region's router. A WAN path's: `a` in
/// region `from`'s router, `b` in region `to`'s (from < to). `a`'s egress is what a sends.
struct lab_link {
  enum class kind { node, wan };
  kind what = kind::node;
  int from = 0; ///< the node (kind node), or the first region (kind wan)
  int to = 0;   ///< the node's region (kind node), or the second region (kind wan)
  std::string label;
  lab_port a;
  lab_port b;
  friend bool operator==(const lab_link&, const lab_link&) = default;
};

struct lab_route {
  std::string netns;
  std::string to; ///< CIDR, or "default"
  std::string via;
  friend bool operator==(const lab_route&, const lab_route&) = default;
};

struct lab_node {
  std::string name;
  int region = 0;
  std::string netns;
  std::string address;             ///< without the mask: what the job's [[node]] host becomes
  std::optional<double> cpu_cores; ///< the node's CPU limit, if any
  friend bool operator==(const lab_node&, const lab_node&) = default;
};

struct lab_router {
  std::string region;
  std::string netns;
  std::string bridge;
  std::string address; ///< CIDR on the bridge
  friend bool operator==(const lab_router&, const lab_router&) = default;
};

struct lab_topology {
  std::string prefix;
  std::string cluster;             ///< the cluster's name
  std::vector<lab_node> nodes;     ///< in the cluster's node order
  std::vector<lab_router> routers; ///< in the cluster's region order
  std::vector<lab_link> links;
  std::vector<lab_route> routes;
  friend bool operator==(const lab_topology&, const lab_topology&) = default;

  /// Every namespace, routers first.
  std::vector<std::string> namespaces() const;
};

/// What the host offers, read once by the command.
struct lab_host {
  int cores = 1;
  double memory_bytes = 0; ///< available memory
};

/// The most nodes a host may hold: four node processes per core, at most 64, each with
/// `node_memory_bytes` free for it.
int max_lab_nodes(const lab_host& host);
inline constexpr double node_memory_bytes = 256.0 * 1024 * 1024;

/// Throws input_error unless `prefix` is 1 to 6 lowercase letters and digits starting with a
/// letter (interface names must fit the kernel's 15 characters with the prefix).
void check_lab_prefix(const std::string& prefix);

/// The lab for cluster `c` (read from `source`, for messages): throws input_error when it
/// is larger than `host` holds, or has more regions than the address plan has room for.
/// `cpu`: a CPU limit in cores per node index (absent: none).
lab_topology plan_lab(const cluster& c, const std::string& prefix, const lab_host& host,
                      const std::vector<std::optional<double>>& cpu, const std::string& source);

/// The rate each WAN path between regions x and y carries from x to y: the fastest link
/// the file gives any device pair crossing it (the lab shapes paths, not pairs).
double wan_rate_Bps(const cluster& c, int x, int y);

/// A token bucket for `rate_Bps`: its burst (as small as tbf keeps the rate with, so that a
/// path passes no more than its rate, as a link would) and queue limit in bytes. On a node's
/// own end (`host_end`) the queue holds what TCP may put below a socket
/// (`host_queue_bytes`, the kernel's default tcp_limit_output_bytes): a host whose interface
/// is its bottleneck holds its sockets back there rather than losing their packets. A queue
/// of 100 ms there overflows under a pipeline's burst of messages, and TCP's losses and
/// retransmits then slow a step by 15-25% beyond what the rate allows.
struct tbf_settings {
  double rate_Bps = 0;
  double burst_bytes = 0;
  double limit_bytes = 0;
};
inline constexpr double host_queue_bytes = 4.0 * 1024 * 1024;
tbf_settings tbf_for(double rate_Bps, bool host_end = false);

/// The commands (argv) that build the lab, in order: namespaces, bridges, veth pairs,
/// addresses, qdiscs, routes. Running them on a host without the lab's namespaces builds it.
std::vector<std::vector<std::string>> lab_build_commands(const lab_topology& t);
/// The tc command that shapes `port`'s egress to `rate_Bps` (replacing what it had).
std::vector<std::string> shape_command(const lab_port& port, double rate_Bps);

/// The commands that take node `node`'s interface down (a partition) and bring it back up
/// (a heal): the kernel drops the routes through an interface that goes down, so the way
/// up puts the node's routes back.
std::vector<std::vector<std::string>> node_down_commands(const lab_topology& t, int node);
std::vector<std::vector<std::string>> node_up_commands(const lab_topology& t, int node);

/// "6.25 MB/s" as tc takes it: "50000000bit".
std::string tc_rate(double rate_Bps);

} // namespace deepcee::runtime
