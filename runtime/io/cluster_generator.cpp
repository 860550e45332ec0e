#include "runtime/io/cluster_generator.hpp"

#include "runtime/base/model_spec.hpp"
#include "runtime/base/splitmix.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

namespace deepcee::runtime {

std::string_view to_string(region_shape s) {
  switch (s) {
  case region_shape::line:
    return "line";
  case region_shape::star:
    return "star";
  case region_shape::mesh:
    return "mesh";
  }
  return "?";
}

namespace {

/// splitmix64's sequence: small, fast, and the same everywhere.
struct rng {
  splitmix_sequence sequence;
  uint64_t next() { return sequence.next(); }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) { return lo + static_cast<int>(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
  template <class T, size_t N>
  const T& pick(const std::array<T, N>& a) {
    return a[size_t(between(0, int(N) - 1))];
  }
};

constexpr std::array<const char*, 7> cloud_kinds{"H100-SXM", "A100-80GB", "A100-40GB", "V100",
                                                 "L4",       "A10",       "T4"};
constexpr std::array<const char*, 6> edge_kinds{"RTX4090", "RTX3090", "A10",
                                                "L4",      "T4",      "Jetson-AGX-Orin"};
constexpr std::array<const char*, 5> end_kinds{"Jetson-AGX-Orin", "Jetson-Xavier-NX", "Jetson-Nano",
                                               "Jetson-TX2", "RTX3090"};
constexpr std::array<int, 4> node_sizes{1, 2, 4, 8};
/// Link speeds in Mbps: a region's LAN, a good WAN hop, a poor one.
constexpr std::array<int, 5> lan_mbps{1000, 2500, 10000, 25000, 100000};
constexpr std::array<int, 6> wan_mbps{50, 100, 200, 1000, 2500, 10000};
constexpr std::array<int, 3> poor_wan_mbps{10, 20, 50};
constexpr std::array<int, 3> nic_mbps{1000, 2500, 10000};
constexpr std::array<const char*, 5> models{"gpt2-124m", "gpt2-355m", "gpt2-774m", "gpt2-1.5b",
                                            "7b"};
constexpr std::array<int, 8> batches{32, 64, 96, 128, 192, 256, 384, 512};

struct region_draft {
  std::string name;
  std::string tier;
  std::vector<std::pair<std::string, int>> nodes; ///< kind, devices per node
};

std::string mbps(double v) {
  return std::to_string(static_cast<long>(v)) + "Mbps";
}
std::string ms(double v) {
  return std::to_string(v) + "ms";
}

/// Regions and their nodes until `target` devices are placed; region 0 is the cloud.
std::vector<region_draft> draft_regions(rng& r, int target) {
  const int count = std::min(r.between(1, 5), std::max(1, target / 2));
  std::vector<region_draft> regions;
  for (int i = 0; i < count; ++i) {
    const char* tier = i == 0 ? "cloud" : r.chance(0.5) ? "edge" : "end";
    regions.push_back({"r" + std::to_string(i), tier, {}});
  }
  for (int placed = 0, i = 0; placed < target; ++i) {
    auto& reg = regions[size_t(i % count)];
    const std::string kind = reg.tier == std::string("cloud")  ? r.pick(cloud_kinds)
                             : reg.tier == std::string("edge") ? r.pick(edge_kinds)
                                                               : r.pick(end_kinds);
    // Every region gets a device: the first round leaves one for each region after this.
    const int left = target - placed - (i < count ? count - 1 - i : 0);
    const int per_node = std::min(r.pick(node_sizes), left);
    const int replicas = std::min(r.between(1, 3), std::max(1, left / per_node));
    for (int k = 0; k < replicas; ++k)
      reg.nodes.emplace_back(kind, per_node);
    placed += per_node * replicas;
  }
  return regions;
}

/// One link override, symmetric or (with a slower uplink) in two directed halves.
std::string link_toml(rng& r, const std::string& a, const std::string& b, int down_mbps,
                      double latency_ms, bool& asymmetric) {
  if (!r.chance(0.4))
    return "[[link]]\nbetween = [\"" + a + "\", \"" + b + "\"]\nbandwidth = \"" + mbps(down_mbps) +
           "\"\nlatency = \"" + ms(latency_ms) + "\"\n";
  asymmetric = true;
  const double up = std::max(1.0, down_mbps / double(r.between(2, 10)));
  return "[[link]]\nfrom = \"" + a + "\"\nto = \"" + b + "\"\nbandwidth = \"" + mbps(down_mbps) +
         "\"\nlatency = \"" + ms(latency_ms) + "\"\n[[link]]\nfrom = \"" + b + "\"\nto = \"" + a +
         "\"\nbandwidth = \"" + mbps(up) + "\"\nlatency = \"" + ms(latency_ms) + "\"\n";
}

/// Whether regions i < j are joined well in `shape` (a line: neighbours; a star: the hub).
bool joined(region_shape shape, size_t i, size_t j) {
  switch (shape) {
  case region_shape::line:
    return j == i + 1;
  case region_shape::star:
    return i == 0;
  case region_shape::mesh:
    return true;
  }
  return false;
}

struct draft_links {
  std::string toml;
  bool asymmetric = false;
};

/// The regions' own LANs and the WAN between them: pairs the shape joins get a link of
/// their own, the others the poor default.
draft_links links_toml(rng& r, const std::vector<region_draft>& regions, region_shape shape) {
  draft_links out;
  out.toml = "[links]\nsame_node = { bandwidth = \"16GB/s\", latency = \"10us\" }\n"
             "same_region = { bandwidth = \"" +
             mbps(r.pick(lan_mbps)) + "\", latency = \"0.2ms\" }\ncross_region = { bandwidth = \"" +
             mbps(r.pick(poor_wan_mbps)) + "\", latency = \"" + ms(r.between(40, 120)) + "\" }\n";
  std::string overrides;
  for (size_t i = 0; i < regions.size(); ++i) {
    if (r.chance(0.5))
      overrides += "[[link]]\nbetween = [\"" + regions[i].name + "\", \"" + regions[i].name +
                   "\"]\nbandwidth = \"" + mbps(r.pick(lan_mbps)) + "\"\nlatency = \"0.5ms\"\n";
    for (size_t j = i + 1; j < regions.size(); ++j)
      if (joined(shape, i, j))
        overrides += link_toml(r, regions[i].name, regions[j].name, r.pick(wan_mbps),
                               r.between(2, 40), out.asymmetric);
  }
  out.toml += overrides;
  return out;
}

/// Regions and nodes as TOML; some nodes of several devices behind one port.
std::string nodes_toml(rng& r, const std::vector<region_draft>& regions, int& ports) {
  std::string s;
  for (const auto& reg : regions)
    s += "[[region]]\nname = \"" + reg.name + "\"\ntier = \"" + reg.tier + "\"\n";
  for (const auto& reg : regions)
    for (size_t k = 0; k < reg.nodes.size(); ++k) {
      const auto& [kind, count] = reg.nodes[k];
      s += "[[node]]\nname = \"" + reg.name + "n" + std::to_string(k) + "\"\nregion = \"" +
           reg.name + "\"\n";
      if (count > 1 && r.chance(0.3)) {
        s += "nic = \"" + mbps(r.pick(nic_mbps)) + "\"\n";
        ++ports;
      }
      s += "devices = [{ kind = \"" + kind + "\", count = " + std::to_string(count) + " }]\n";
    }
  return s;
}

/// The largest preset no larger than the one drawn whose state takes at most half the
/// cluster's memory and whose largest layer fits its largest device.
std::string fitting_model(rng& r, const cluster& c) {
  double total = 0, largest = 0;
  for (const auto& d : c.devices) {
    total += d.usable_memory_bytes();
    largest = std::max(largest, d.usable_memory_bytes());
  }
  for (int i = r.between(0, int(models.size()) - 1); i > 0; --i) {
    const model_spec m = make_model_spec(*model_preset(models[size_t(i)]), models[size_t(i)]);
    double layer = 0;
    for (const auto& l : m.layers)
      layer = std::max(layer, double(l.state_bytes()));
    if (double(m.total_state_bytes()) <= total / 2 && layer <= largest / 2)
      return models[size_t(i)];
  }
  return models[0];
}

std::string summary_of(const generated_cluster& g, int ports, bool asymmetric) {
  std::map<std::string, int> kinds;
  for (const auto& d : g.c.devices)
    kinds[d.kind]++;
  std::string s = std::to_string(g.c.regions.size()) + "r " + std::string(to_string(g.shape)) +
                  " " + std::to_string(g.c.devices.size()) + "d:";
  for (const auto& [k, n] : kinds)
    s += " " + std::to_string(n) + "x" + k;
  if (ports)
    s += ", " + std::to_string(ports) + " nic";
  if (asymmetric)
    s += ", asym";
  return s;
}

} // namespace

generated_cluster generate_cluster(uint64_t seed, const generator_options& options) {
  rng r{{seed * 0x2545f4914f6cdd1dULL + 1}};
  generated_cluster g;
  const int target =
      r.between(options.min_devices, std::max(options.min_devices, options.max_devices));
  const auto regions = draft_regions(r, target);
  g.shape = std::array{region_shape::line, region_shape::star,
                       region_shape::mesh}[size_t(r.between(0, 2))];
  int ports = 0;
  const draft_links links = links_toml(r, regions, g.shape);
  g.toml =
      "name = \"gen-" + std::to_string(seed) + "\"\n" + links.toml + nodes_toml(r, regions, ports);
  g.c = parse_cluster(g.toml, "gen-" + std::to_string(seed) + ".toml");
  g.model = fitting_model(r, g.c);
  g.batch = r.pick(batches);
  g.summary =
      summary_of(g, ports, links.asymmetric) + ", " + g.model + " b" + std::to_string(g.batch);
  g.toml = "# " + g.summary + "\n" + g.toml;
  return g;
}

} // namespace deepcee::runtime
