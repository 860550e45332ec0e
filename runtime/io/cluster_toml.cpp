#include "runtime/io/cluster_toml.hpp"
#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/units_toml.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace deepcee::runtime {
namespace {

using namespace toml_input;
namespace fs = std::filesystem;

constexpr double gbps = 1e9 / 8;     // a bare bandwidth number is in Gbps
constexpr double millisecond = 1e-3; // a bare latency number is in ms
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

class reader {
public:
  reader(const fs::path& file) : file_(file) {}

  cluster read(const toml::table& root) {
    check_keys(file_, root, {"name", "links", "region", "node", "link"}, "the cluster file");
    if (auto n = root.get("name"))
      out_.name = get_string(file_, *n, "name");
    if (auto n = root.get("links"))
      read_defaults(as_table(file_, *n, "[links]"));
    for_each_table(root, "region", [&](const toml::table& t) { read_region(t); });
    if (out_.regions.empty())
      fail_input(file_, 0, "no [[region]]: a cluster needs at least one region");
    for_each_table(root, "node", [&](const toml::table& t) { read_node(t); });
    if (out_.devices.empty())
      fail_input(file_, 0, "no devices: a cluster needs at least one [[node]] with devices");
    for_each_table(root, "link", [&](const toml::table& t) { read_link(t); });
    return std::move(out_);
  }

private:
  template <class F>
  void for_each_table(const toml::table& root, std::string_view key, F f) {
    const toml::node* n = root.get(key);
    if (!n)
      return;
    if (!n->is_array_of_tables())
      fail_at(file_, *n,
              "'" + std::string(key) + "' must be an array of tables ([[" + std::string(key) +
                  "]])");
    for (const auto& item : *n->as_array())
      f(*item.as_table());
  }

  double bandwidth(const toml::node& n, const std::string& what) {
    double v = get_quantity(file_, n, what, parse_bandwidth, gbps, "\"100Mbps\", \"25GB/s\"");
    if (!(v > 0) || !std::isfinite(v))
      fail_at(file_, n, what + " must be positive");
    return v;
  }

  double latency(const toml::node& n, const std::string& what) {
    double v = get_quantity(file_, n, what, parse_duration, millisecond, "\"40ms\", \"5us\"");
    if (v < 0 || !std::isfinite(v))
      fail_at(file_, n, what + " must not be negative");
    return v;
  }

  void read_defaults(const toml::table& t) {
    check_keys(file_, t, {"same_node", "same_region", "cross_region"}, "[links]");
    auto level = [&](const char* key, link_params& p) {
      const toml::node* n = t.get(key);
      if (!n)
        return;
      const toml::table& lt = as_table(file_, *n, std::string("links.") + key);
      check_keys(file_, lt, {"bandwidth", "latency"}, std::string("links.") + key);
      if (auto b = lt.get("bandwidth"))
        p.bandwidth_Bps = bandwidth(*b, std::string("links.") + key + ".bandwidth");
      if (auto l = lt.get("latency"))
        p.latency_s = latency(*l, std::string("links.") + key + ".latency");
    };
    level("same_node", out_.links.same_node);
    level("same_region", out_.links.same_region);
    level("cross_region", out_.links.cross_region);
  }

  const toml::node& required(const toml::table& t, std::string_view key, std::string_view where) {
    const toml::node* n = t.get(key);
    if (!n)
      fail_at(file_, t, std::string(where) + " needs '" + std::string(key) + "'");
    return *n;
  }

  /// Names share one namespace, so that a [[link]] endpoint is never ambiguous.
  void claim_name(const std::string& name, const toml::node& at) {
    if (name.empty())
      fail_at(file_, at, "a name must not be empty");
    auto [it, fresh] = names_.emplace(name, line_of(at));
    if (!fresh)
      fail_at(file_, at,
              "duplicate name '" + name + "' (first used at line " + std::to_string(it->second) +
                  ")");
  }

  void read_region(const toml::table& t) {
    check_keys(file_, t, {"name", "tier"}, "[[region]]");
    const toml::node& name_node = required(t, "name", "[[region]]");
    region r;
    r.name = get_string(file_, name_node, "region name");
    claim_name(r.name, name_node);
    const toml::node& tier_node = required(t, "tier", "[[region]] '" + r.name + "'");
    std::string tier = get_string(file_, tier_node, "tier");
    if (tier == "cloud")
      r.tier = region_tier::cloud;
    else if (tier == "edge")
      r.tier = region_tier::edge;
    else if (tier == "end")
      r.tier = region_tier::end;
    else
      fail_at(file_, tier_node, "unknown tier '" + tier + "' (expected cloud, edge or end)");
    out_.regions.push_back(std::move(r));
  }

  void read_node(const toml::table& t) {
    check_keys(file_, t, {"name", "region", "host", "port", "replicas", "nic", "devices"},
               "[[node]]");
    const toml::node& name_node = required(t, "name", "[[node]]");
    std::string base = get_string(file_, name_node, "node name");
    const toml::node& region_node = required(t, "region", "[[node]] '" + base + "'");
    std::string region_name = get_string(file_, region_node, "region");
    auto region = out_.find_region(region_name);
    if (!region)
      fail_at(file_, region_node,
              "node '" + base + "' is in unknown region '" + region_name + "'" + known_regions());
    std::string host;
    if (auto n = t.get("host"))
      host = get_string(file_, *n, "host");
    int64_t port = 0;
    if (auto n = t.get("port")) {
      port = get_integer(file_, *n, "port");
      if (port < 1 || port > 65535)
        fail_at(file_, *n, "port must be in 1..65535");
    }
    int64_t replicas = 1;
    if (auto n = t.get("replicas")) {
      replicas = get_integer(file_, *n, "replicas");
      if (replicas < 1 || replicas > 100000)
        fail_at(file_, *n, "replicas must be in 1..100000");
    }
    std::optional<double> nic;
    if (auto n = t.get("nic"))
      nic = bandwidth(*n, "nic");
    const toml::node& devices_node = required(t, "devices", "[[node]] '" + base + "'");
    const toml::array* devices = devices_node.as_array();
    if (!devices || devices->empty() || !devices->is_array_of_tables())
      fail_at(file_, devices_node,
              "devices of node '" + base +
                  "' must be a non-empty array of tables, e.g. "
                  "[{kind = \"RTX3090\", count = 4}]");
    for (int64_t r = 0; r < replicas; ++r) {
      node nd;
      // Replicated nodes are numbered so that one [[node]] can describe a rack.
      nd.name = replicas == 1 ? base : base + std::to_string(r);
      claim_name(nd.name, name_node);
      nd.host = host;
      nd.port = port ? static_cast<int>(port + r) : 0;
      if (nd.port > 65535)
        fail_at(file_, *t.get("port"), "port + replicas exceeds 65535");
      nd.region = *region;
      nd.nic_Bps = nic;
      int node_index = static_cast<int>(out_.nodes.size());
      out_.nodes.push_back(nd);
      for (const auto& item : *devices)
        read_devices(*item.as_table(), node_index, replicas > 1);
      if (out_.devices.size() > max_cluster_devices)
        fail_at(file_, t.get("replicas") ? *t.get("replicas") : devices_node,
                "node '" + base + "' brings the cluster to more than " +
                    std::to_string(max_cluster_devices) +
                    " devices, the most deepcee plans for (its search grows faster than the "
                    "device count: cee-1024.toml's 1024 take a minute)");
    }
  }

  void read_devices(const toml::table& t, int node_index, bool replicated) {
    check_keys(file_, t,
               {"kind", "count", "name", "memory", "fp32_flops", "bf16_flops", "mem_bandwidth"},
               "a device entry");
    const toml::node& kind_node = required(t, "kind", "a device entry");
    std::string kind = get_string(file_, kind_node, "kind");
    auto spec = find_device_kind(kind);
    if (!spec)
      fail_at(file_, kind_node,
              "unknown device kind '" + kind + "' (known: " + known_device_kinds() + ")");
    int64_t count = 1;
    if (auto n = t.get("count")) {
      count = get_integer(file_, *n, "count");
      if (count < 1 || count > 65536)
        fail_at(file_, *n, "count must be in 1..65536");
    }
    device d;
    d.kind = spec->kind;
    d.cls = spec->cls;
    d.memory_bytes = spec->memory_bytes;
    d.fp32_flops = spec->fp32_flops;
    d.bf16_flops = spec->bf16_flops;
    d.mem_bandwidth_Bps = spec->mem_bandwidth_Bps;
    auto positive = [&](const char* key, double& field, auto parse, double bare, const char* eg) {
      if (auto n = t.get(key)) {
        field = get_quantity(file_, *n, key, parse, bare, eg);
        if (!(field > 0) || !std::isfinite(field))
          fail_at(file_, *n, std::string(key) + " must be positive");
      }
    };
    positive("memory", d.memory_bytes, parse_bytes, gib, "\"24GiB\"; a number is GiB");
    positive("fp32_flops", d.fp32_flops, parse_flops, 1e12, "\"35.6TFLOPS\"; a number is TFLOP/s");
    positive("bf16_flops", d.bf16_flops, parse_flops, 1e12, "\"71TFLOPS\"; a number is TFLOP/s");
    positive("mem_bandwidth", d.mem_bandwidth_Bps, parse_bandwidth, 1e9,
             "\"936GB/s\"; a number is GB/s");
    const toml::node* name_node = t.get("name");
    if (name_node && (count != 1 || replicated))
      fail_at(file_, *name_node, "a device name needs count = 1 in a node without replicas");
    node& nd = out_.nodes[static_cast<size_t>(node_index)];
    for (int64_t i = 0; i < count; ++i) {
      d.id = static_cast<int>(out_.devices.size());
      d.node = node_index;
      d.region = nd.region;
      d.name = name_node ? get_string(file_, *name_node, "device name")
                         : nd.name + "/" + std::to_string(nd.devices.size());
      claim_name(d.name, name_node ? *name_node : t);
      nd.devices.push_back(d.id);
      out_.devices.push_back(d);
    }
  }

  link_endpoint endpoint(const toml::node& n, const std::string& what) {
    std::string name = get_string(file_, n, what);
    if (auto i = out_.find_device(name))
      return {link_endpoint::scope::device, *i};
    if (auto i = out_.find_node(name))
      return {link_endpoint::scope::node, *i};
    if (auto i = out_.find_region(name))
      return {link_endpoint::scope::region, *i};
    std::string some;
    for (size_t i = 0; i < out_.nodes.size() && i < 4; ++i)
      some += (some.empty() ? "" : ", ") + out_.nodes[i].name;
    fail_at(file_, n,
            "link names unknown node, device or region '" + name + "' (nodes include: " + some +
                "; devices are named like '" + out_.devices.front().name + "')");
  }

  void read_link(const toml::table& t) {
    check_keys(file_, t, {"between", "from", "to", "bandwidth", "latency"}, "[[link]]");
    link_override o;
    o.line = line_of(t);
    if (auto b = t.get("between")) {
      if (t.get("from") || t.get("to"))
        fail_at(file_, *b, "a [[link]] gives either 'between' or 'from' and 'to', not both");
      const toml::array* pair = b->as_array();
      if (!pair || pair->size() != 2)
        fail_at(file_, *b, "'between' must list two names, e.g. [\"cloud0\", \"edge0\"]");
      o.from = endpoint(*pair->get(0), "link endpoint");
      o.to = endpoint(*pair->get(1), "link endpoint");
    } else {
      const toml::node* from = t.get("from");
      const toml::node* to = t.get("to");
      if (!from || !to)
        fail_at(file_, t, "a [[link]] needs 'between = [a, b]' or both 'from' and 'to'");
      o.from = endpoint(*from, "from");
      o.to = endpoint(*to, "to");
      o.directed = true;
    }
    if (auto n = t.get("bandwidth"))
      o.bandwidth_Bps = bandwidth(*n, "bandwidth");
    if (auto n = t.get("latency"))
      o.latency_s = latency(*n, "latency");
    if (!o.bandwidth_Bps && !o.latency_s)
      fail_at(file_, t, "a [[link]] needs 'bandwidth', 'latency' or both");
    for (const auto& prior : out_.overrides) {
      bool same = prior.directed == o.directed &&
                  ((prior.from == o.from && prior.to == o.to) ||
                   (!o.directed && prior.from == o.to && prior.to == o.from));
      if (same)
        fail_at(file_, t,
                "duplicate link (the same pair is given at line " + std::to_string(prior.line) +
                    ")");
    }
    out_.overrides.push_back(o);
  }

  std::string known_regions() const {
    std::string list;
    for (const auto& r : out_.regions)
      list += (list.empty() ? "" : ", ") + r.name;
    return " (regions: " + list + ")";
  }

  fs::path file_;
  cluster out_;
  std::map<std::string, int64_t> names_;
};

} // namespace

cluster parse_cluster(std::string_view toml_text, const fs::path& source) {
  toml::table root = parse_text(toml_text, source);
  return reader(source).read(root);
}

cluster load_cluster(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail_input(path, 0, "cannot read the cluster file");
  return parse_cluster(read_bounded_file(path, max_config_bytes, "cluster file"), path);
}

} // namespace deepcee::runtime
