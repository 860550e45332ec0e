#include "actors/job/run_trace.hpp"

#include "runtime/plan/plan_allocation.hpp"
#include "runtime/schedule/schedule.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace deepcee::actors {

namespace {

enum process : int { stages_process = 0, devices_process = 1, links_process = 2 };

std::string device_name(const runtime::cluster& c, int device) {
  if (device >= 0 && device < static_cast<int>(c.devices.size()))
    return c.devices[static_cast<size_t>(device)].name;
  return "device " + std::to_string(device);
}

int region_of(const runtime::cluster& c, int device) {
  if (device >= 0 && device < static_cast<int>(c.devices.size()))
    return c.devices[static_cast<size_t>(device)].region;
  return -1;
}

} // namespace

runtime::trace_document run_trace_document(const std::vector<runtime::plan>& plans,
                                           const runtime::cluster& c,
                                           const std::vector<step_result>& steps,
                                           const std::vector<link_sample>& samples) {
  runtime::trace_document doc;
  doc.processes = {"stages", "devices", "links"};
  // One set of stage tracks per plan in force: a re-plan's stages get their own.
  std::vector<int> first_track(steps.size(), 0);
  int tracks = 0;
  const runtime::plan* shown = nullptr;
  for (size_t k = 0; k < steps.size() && !plans.empty(); ++k) {
    const auto& plan = plans[std::min(k, plans.size() - 1)];
    if (!shown || !runtime::same_layout(*shown, plan)) {
      const std::string since = shown ? " from step " + std::to_string(steps[k].step) : "";
      first_track[k] = tracks;
      for (size_t p = 0; p < plan.pipelines.size(); ++p)
        for (size_t s = 0; s < plan.pipelines[p].stages.size(); ++s) {
          std::string devices;
          for (int d : plan.pipelines[p].stages[s].devices)
            devices += (devices.empty() ? "" : ", ") + device_name(c, d);
          doc.tracks.push_back({stages_process, tracks++,
                                "pipeline " + std::to_string(p) + " stage " + std::to_string(s) +
                                    " (" + devices + ")" + since});
        }
      shown = &plan;
    } else {
      first_track[k] = first_track[k - 1];
    }
  }
  const int job_track = static_cast<int>(c.devices.size());
  std::set<int> device_tracks;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& r = steps[i];
    const std::vector<std::pair<std::string, double>> step_arg{{"step", double(r.step)}};
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const auto& op = r.ops[k];
      const runtime::schedule_op sop{static_cast<runtime::op_kind>(op.kind), op.micro_batch};
      doc.spans.push_back({runtime::to_string(sop), stages_process, first_track[i] + r.op_stage[k],
                           op.start, op.end, step_arg});
    }
    for (const auto& f : r.finish) {
      const int track = f.device >= 0 ? f.device : job_track;
      if (device_tracks.insert(track).second)
        doc.tracks.push_back(
            {devices_process, track, f.device >= 0 ? device_name(c, f.device) : "job"});
      doc.spans.push_back({f.name, devices_process, track, f.start_s, f.end_s, step_arg});
    }
  }
  std::set<int> links;
  for (const auto& s : samples) {
    const std::string ends = device_name(c, s.from) + " -> " + device_name(c, s.to);
    const int from_region = region_of(c, s.from), to_region = region_of(c, s.to);
    const bool wan = from_region != to_region && from_region >= 0 && to_region >= 0;
    if (links.insert(s.link).second)
      doc.tracks.push_back({links_process, s.link,
                            wan ? "link " + c.regions[size_t(from_region)].name + " -> " +
                                      c.regions[size_t(to_region)].name + " (WAN pipe)"
                                : "link " + ends});
    const std::string what =
        s.kind == messages::tensor_kind::activation ? "send act m" : "send grad m";
    // A WAN pipe carries several device pairs: its spans name theirs.
    doc.spans.push_back(
        {what + std::to_string(s.micro_batch) + (wan ? " " + ends : ""),
         links_process,
         s.link,
         s.start,
         s.drained,
         {{"step", double(s.step)}, {"bytes", s.bytes}, {"arrival_us", s.end * 1e6}}});
  }
  return doc;
}

void write_run_trace(std::ostream& out, const std::vector<runtime::plan>& plans,
                     const runtime::cluster& c, const std::vector<step_result>& steps,
                     const std::vector<link_sample>& samples,
                     const std::vector<runtime::trace_instant>& injected) {
  auto doc = run_trace_document(plans, c, steps, samples);
  doc.instants = injected;
  runtime::write_trace(doc, out);
}

} // namespace deepcee::actors
