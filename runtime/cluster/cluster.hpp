#pragma once

#include "runtime/cluster/device_catalogue.hpp"

#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// Where a region sits in the cloud-edge-end hierarchy.
enum class region_tier { cloud, edge, end };

std::string_view to_string(region_tier t);

/// One direction of a network path: time(bytes) = latency_s + bytes / bandwidth_Bps.
struct link_params {
  double latency_s = 0;     ///< alpha
  double bandwidth_Bps = 0; ///< bytes per second

  double transfer_time(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
  friend bool operator==(const link_params&, const link_params&) = default;
};

/// Which default applies between two devices.
enum class link_level { self, same_node, same_region, cross_region };

std::string_view to_string(link_level l);

/// Defaults used wherever no override names a pair. The values without a [links] table
/// are a PCIe 4.0 host (16 GB/s, 10 us), a datacenter LAN (10 Gbps, 0.1 ms) and a WAN
/// (100 Mbps, 40 ms).
struct link_defaults {
  link_params same_node{10e-6, 16e9};
  link_params same_region{0.1e-3, 10e9 / 8};
  link_params cross_region{40e-3, 100e6 / 8};
};

struct region {
  std::string name;
  region_tier tier = region_tier::cloud;
};

/// One host and one process of the job.
struct node {
  std::string name;
  std::string host;         ///< empty: chosen when the job starts (local by default)
  int port = 0;             ///< 0: chosen when the job starts
  int region = 0;           ///< index into cluster::regions
  std::vector<int> devices; ///< indices into cluster::devices, in local order
  /// The network interface's capacity in bytes per second, each direction (the file's
  /// `nic`). Unset, it is as fast as the links the file gives the node. The interface then
  /// only adds sharing (network_path.hpp).
  std::optional<double> nic_Bps;
};

struct device {
  int id = 0;       ///< global index, equal to its place in cluster::devices
  std::string name; ///< "<node>/<local index>" unless the file names it
  std::string kind; ///< canonical catalogue kind
  device_class cls = device_class::datacenter_gpu;
  int node = 0;   ///< index into cluster::nodes
  int region = 0; ///< index into cluster::regions
  double memory_bytes = 0;
  double fp32_flops = 0;
  double bf16_flops = 0;
  double mem_bandwidth_Bps = 0;
  /// How many times slower than its figures the device runs now (1: as they say). Only an
  /// estimated cluster sets it (environment_monitor::estimated_cluster). The simulator
  /// stretches the device's ops by it as it stretches them under a script's slowdown (the
  /// whole op, launches included, the schedules still built from the nominal op times: what
  /// the running job does). The planner does not read it (the adapter's re-plan folds it
  /// into the figures).
  double slowdown = 1;

  double peak_flops(precision p) const { return p == precision::bf16 ? bf16_flops : fp32_flops; }
  /// What training may fill: the rest holds the CUDA context, communication buffers and
  /// allocator fragmentation. Plans, schedules and out-of-memory flags all count against it.
  double usable_memory_bytes() const { return usable_memory_fraction * memory_bytes; }

  static constexpr double usable_memory_fraction = 0.9;
};

/// Something a link override names: a whole region, a node, or one device.
struct link_endpoint {
  enum class scope { region, node, device };
  scope what = scope::node;
  int index = 0;
  friend bool operator==(const link_endpoint&, const link_endpoint&) = default;
};

struct cluster;
/// Whether device `dev` lies inside the region, node or device `e` names.
bool endpoint_contains(const cluster& c, const link_endpoint& e, int dev);

/// Overrides the default for every device pair (a, b) with a inside `from` and b inside
/// `to` (and, unless `directed`, the pair the other way round as well). Fields left out
/// fall back to the level default of that pair, not to a broader override.
struct link_override {
  link_endpoint from;
  link_endpoint to;
  bool directed = false;
  std::optional<double> latency_s;
  std::optional<double> bandwidth_Bps;
  int64_t line = 0; ///< where the file gave it, for messages
};

struct cluster {
  std::string name;
  std::vector<region> regions;
  std::vector<node> nodes;
  std::vector<device> devices;
  link_defaults links;
  std::vector<link_override> overrides;

  link_level level_between(int a, int b) const;

  /// The effective link from device a to device b. The most specific override wins
  /// (device > node > region on each side, summed over both sides); at equal
  /// specificity a directed override beats a symmetric one, and then the later one in
  /// the file wins. A device to itself is free (zero latency, infinite bandwidth).
  link_params link_between(int a, int b) const;

  std::optional<int> find_region(std::string_view name) const;
  std::optional<int> find_node(std::string_view name) const;
  std::optional<int> find_device(std::string_view name) const;
};

} // namespace deepcee::runtime
