#include "runtime/io/trace_writer.hpp"

#include <nlohmann/json.hpp>

namespace deepcee::runtime {

void write_trace(const trace_document& doc, std::ostream& out) {
  using json = nlohmann::json;
  json events = json::array();
  for (size_t p = 0; p < doc.processes.size(); ++p)
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", static_cast<int>(p)},
                      {"args", {{"name", doc.processes[p]}}}});
  for (const auto& t : doc.tracks)
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", t.process},
                      {"tid", t.track},
                      {"args", {{"name", t.name}}}});
  for (const auto& s : doc.spans) {
    json e = {{"ph", "X"},      {"name", s.name},        {"pid", s.process},
              {"tid", s.track}, {"ts", s.start_s * 1e6}, {"dur", (s.end_s - s.start_s) * 1e6}};
    if (!s.args.empty()) {
      json args = json::object();
      for (const auto& [key, value] : s.args)
        args[key] = value;
      e["args"] = std::move(args);
    }
    events.push_back(std::move(e));
  }
  for (const auto& i : doc.instants)
    events.push_back(
        {{"ph", "i"}, {"s", "g"}, {"name", i.name}, {"pid", 0}, {"tid", 0}, {"ts", i.at_s * 1e6}});
  out << json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

} // namespace deepcee::runtime
