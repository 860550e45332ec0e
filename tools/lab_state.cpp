#include "tools/lab_state.hpp"

#include "runtime/base/errors.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace deepcee::tools {

namespace {

using json = nlohmann::json;
using namespace runtime;

json port_json(const lab_port& p) {
  return {{"netns", p.netns},
          {"name", p.name},
          {"rate_Bps", p.rate_Bps ? json(*p.rate_Bps) : json()},
          {"address", p.address},
          {"bridge", p.bridge},
          {"host_end", p.host_end}};
}

lab_port port_of(const json& j) {
  return {.netns = j.at("netns"),
          .name = j.at("name"),
          .rate_Bps = j.at("rate_Bps").is_null()
                          ? std::nullopt
                          : std::optional<double>(j.at("rate_Bps").get<double>()),
          .address = j.at("address"),
          .bridge = j.at("bridge"),
          .host_end = j.value("host_end", false)};
}

json topology_json(const lab_topology& t) {
  json j{{"prefix", t.prefix}, {"cluster", t.cluster}};
  for (const auto& n : t.nodes)
    j["nodes"].push_back({{"name", n.name},
                          {"region", n.region},
                          {"netns", n.netns},
                          {"address", n.address},
                          {"cpu_cores", n.cpu_cores ? json(*n.cpu_cores) : json()}});
  for (const auto& r : t.routers)
    j["routers"].push_back(
        {{"region", r.region}, {"netns", r.netns}, {"bridge", r.bridge}, {"address", r.address}});
  for (const auto& l : t.links)
    j["links"].push_back({{"wan", l.what == lab_link::kind::wan},
                          {"from", l.from},
                          {"to", l.to},
                          {"label", l.label},
                          {"a", port_json(l.a)},
                          {"b", port_json(l.b)}});
  for (const auto& r : t.routes)
    j["routes"].push_back({{"netns", r.netns}, {"to", r.to}, {"via", r.via}});
  return j;
}

lab_topology topology_of(const json& j) {
  lab_topology t;
  t.prefix = j.at("prefix");
  t.cluster = j.at("cluster");
  for (const auto& n : j.value("nodes", json::array()))
    t.nodes.push_back({.name = n.at("name"),
                       .region = n.at("region"),
                       .netns = n.at("netns"),
                       .address = n.at("address"),
                       .cpu_cores = n.at("cpu_cores").is_null()
                                        ? std::nullopt
                                        : std::optional<double>(n.at("cpu_cores").get<double>())});
  for (const auto& r : j.value("routers", json::array()))
    t.routers.push_back({r.at("region"), r.at("netns"), r.at("bridge"), r.at("address")});
  for (const auto& l : j.value("links", json::array()))
    t.links.push_back({l.at("wan").get<bool>() ? lab_link::kind::wan : lab_link::kind::node,
                       l.at("from"), l.at("to"), l.at("label"), port_of(l.at("a")),
                       port_of(l.at("b"))});
  for (const auto& r : j.value("routes", json::array()))
    t.routes.push_back({r.at("netns"), r.at("to"), r.at("via")});
  return t;
}

} // namespace

std::filesystem::path lab_state_file(const std::filesystem::path& dir, const std::string& prefix) {
  return dir / (prefix + ".json");
}

void save_lab_state(const lab_state& s, const std::filesystem::path& file) {
  std::filesystem::create_directories(file.parent_path());
  const json j{{"topology", topology_json(s.topology)},
               {"cluster_file", s.cluster_file},
               {"cgroups", s.cgroups},
               {"cgroup_v2", s.cgroup_v2}};
  const auto tmp = file.string() + ".tmp";
  std::ofstream(tmp) << j.dump(1) << "\n";
  std::filesystem::rename(tmp, file);
}

lab_state load_lab_state(const std::filesystem::path& file, const std::string& prefix) {
  std::ifstream in(file);
  if (!in)
    throw input_error("no lab is up under prefix '" + prefix + "' (" + file.string() + ")");
  try {
    const json j = json::parse(in);
    return {.topology = topology_of(j.at("topology")),
            .cluster_file = j.at("cluster_file"),
            .cgroups = j.at("cgroups").get<std::vector<std::string>>(),
            .cgroup_v2 = j.at("cgroup_v2")};
  } catch (const json::exception& e) {
    throw input_error(file.string() + ": not a lab state file: " + e.what());
  }
}

} // namespace deepcee::tools
