#include "actors/job/run_trace.hpp"

#include "runtime/schedule/schedule.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace deepcee::actors {

void write_run_trace(std::ostream& out, const runtime::plan& plan,
                     const std::vector<step_result>& steps,
                     const std::vector<link_sample>& samples) {
  using nlohmann::json;
  json events = json::array();
  const auto meta = [&](int pid, int tid, const std::string& name) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "stages"}}}});
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 2}, {"args", {{"name", "links"}}}});
  int flat = 0;
  for (size_t p = 0; p < plan.pipelines.size(); ++p)
    for (size_t s = 0; s < plan.pipelines[p].stages.size(); ++s)
      meta(1, flat++, "pipeline " + std::to_string(p) + " stage " + std::to_string(s));
  for (const auto& r : steps)
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const auto& op = r.ops[k];
      const runtime::schedule_op sop{static_cast<runtime::op_kind>(op.kind), op.micro_batch};
      events.push_back({{"ph", "X"},
                        {"name", runtime::to_string(sop)},
                        {"pid", 1},
                        {"tid", r.op_stage[k]},
                        {"ts", op.start * 1e6},
                        {"dur", (op.end - op.start) * 1e6},
                        {"args", {{"step", r.step}}}});
    }
  std::map<int, bool> named;
  for (const auto& s : samples) {
    if (!named[s.link])
      meta(2, s.link,
           "link " + std::to_string(s.link) + " (" + std::to_string(s.from) + " -> " +
               std::to_string(s.to) + ")");
    named[s.link] = true;
    const std::string what =
        s.kind == messages::tensor_kind::activation ? "send act m" : "send grad m";
    events.push_back(
        {{"ph", "X"},
         {"name", what + std::to_string(s.micro_batch)},
         {"pid", 2},
         {"tid", s.link},
         {"ts", s.start * 1e6},
         {"dur", (s.drained - s.start) * 1e6},
         {"args", {{"step", s.step}, {"bytes", s.bytes}, {"arrival_us", s.end * 1e6}}}});
  }
  out << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << '\n';
}

} // namespace deepcee::actors
