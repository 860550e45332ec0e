#include "runtime/io/chrome_trace.hpp"

#include <nlohmann/json.hpp>

namespace deepcee::runtime {

/// Processes: one per node (pid = node index) holding its devices' tracks (tid = device
/// id) and the tracks of the links its devices send on (tid = device count + link index);
/// one more (pid = node count) for the WAN pipes between regions. Perfetto shows each
/// thread as a row, so every device and every link gets its own row.
void write_chrome_trace(const sim_result& result, const cluster& c, std::ostream& out) {
  using json = nlohmann::json;
  const int wan_pid = static_cast<int>(c.nodes.size());
  const auto link_pid = [&](const link_stats& l) {
    return l.kind == link_kind::region_pair ? wan_pid : c.devices[static_cast<size_t>(l.from)].node;
  };
  json events = json::array();
  const auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0)
      e["tid"] = tid;
    events.push_back(std::move(e));
  };
  for (size_t n = 0; n < c.nodes.size(); ++n)
    meta("process_name", static_cast<int>(n), -1, c.nodes[n].name);
  meta("process_name", wan_pid, -1, "WAN");
  for (const auto& d : result.devices) {
    const auto& dev = c.devices[static_cast<size_t>(d.device)];
    meta("thread_name", dev.node, d.device,
         dev.name + " (" + dev.kind + ", p" + std::to_string(d.pipeline) + " s" +
             std::to_string(d.stage) + ")");
  }
  for (size_t k = 0; k < result.links.size(); ++k) {
    const auto& l = result.links[k];
    const std::string name = l.kind == link_kind::region_pair
                                 ? c.regions[static_cast<size_t>(l.from)].name + " -> " +
                                       c.regions[static_cast<size_t>(l.to)].name
                                 : c.devices[static_cast<size_t>(l.from)].name + " -> " +
                                       c.devices[static_cast<size_t>(l.to)].name;
    meta("thread_name", link_pid(l), result.device_count + static_cast<int>(k), "link " + name);
  }
  for (const auto& e : result.events) {
    int pid = 0;
    if (e.track < result.device_count)
      pid = c.devices[static_cast<size_t>(e.track)].node;
    else
      pid = link_pid(result.links[static_cast<size_t>(e.track - result.device_count)]);
    events.push_back({{"ph", "X"},
                      {"name", e.name},
                      {"pid", pid},
                      {"tid", e.track},
                      {"ts", e.start_s * 1e6},
                      {"dur", (e.end_s - e.start_s) * 1e6}});
  }
  out << json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

} // namespace deepcee::runtime
