#include "runtime/io/chrome_trace.hpp"

#include "runtime/io/trace_writer.hpp"

namespace deepcee::runtime {

/// Processes: one per node (pid = node index), and one more (pid = node count) for the WAN
/// pipes between regions. A node's process holds its devices' tracks (tid = device id).
/// It also holds the tracks of the links its devices send on (tid = device count + link
/// index). Perfetto shows each
/// thread as a row, so every device and every link gets its own row.
trace_document chrome_trace_document(const sim_result& result, const cluster& c) {
  trace_document doc;
  const int wan_pid = static_cast<int>(c.nodes.size());
  const auto link_pid = [&](const link_stats& l) {
    return l.kind == link_kind::region_pair ? wan_pid : c.devices[static_cast<size_t>(l.from)].node;
  };
  for (const auto& n : c.nodes)
    doc.processes.push_back(n.name);
  doc.processes.push_back("WAN");
  for (const auto& d : result.devices) {
    const auto& dev = c.devices[static_cast<size_t>(d.device)];
    doc.tracks.push_back({dev.node, d.device,
                          dev.name + " (" + dev.kind + ", p" + std::to_string(d.pipeline) + " s" +
                              std::to_string(d.stage) + ")"});
  }
  for (size_t k = 0; k < result.links.size(); ++k) {
    const auto& l = result.links[k];
    const std::string name = l.kind == link_kind::region_pair
                                 ? c.regions[static_cast<size_t>(l.from)].name + " -> " +
                                       c.regions[static_cast<size_t>(l.to)].name
                                 : c.devices[static_cast<size_t>(l.from)].name + " -> " +
                                       c.devices[static_cast<size_t>(l.to)].name;
    doc.tracks.push_back({link_pid(l), result.device_count + static_cast<int>(k), "link " + name});
  }
  for (const auto& e : result.events) {
    int pid = 0;
    if (e.track < result.device_count)
      pid = c.devices[static_cast<size_t>(e.track)].node;
    else
      pid = link_pid(result.links[static_cast<size_t>(e.track - result.device_count)]);
    doc.spans.push_back({e.name, pid, e.track, e.start_s, e.end_s, {}});
  }
  return doc;
}

void write_chrome_trace(const sim_result& result, const cluster& c, std::ostream& out) {
  write_trace(chrome_trace_document(result, c), out);
}

} // namespace deepcee::runtime
