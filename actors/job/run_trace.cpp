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

/// One set of stage tracks per plan in force, so that a re-plan's stages get their own.
/// Returns the first stage track of each step.
std::vector<int> add_stage_tracks(runtime::trace_document& doc,
                                  const std::vector<runtime::plan>& plans,
                                  const runtime::cluster& c,
                                  const std::vector<step_result>& steps) {
  std::vector<int> first_track(steps.size(), 0);
  int tracks = 0;
  const runtime::plan* shown = nullptr;
  for (size_t k = 0; k < steps.size() && !plans.empty(); ++k) {
    const auto& plan = plans[std::min(k, plans.size() - 1)];
    if (shown && runtime::same_layout(*shown, plan)) {
      first_track[k] = first_track[k - 1];
      continue;
    }
    const std::string since = shown ? " from step " + std::to_string(steps[k].step) : "";
    first_track[k] = tracks;
    for (size_t p = 0; p < plan.pipelines.size(); ++p)
      for (size_t s = 0; s < plan.pipelines[p].stages.size(); ++s) {
        std::string devices;
        for (int d : plan.pipelines[p].stages[s].devices)
          devices += (devices.empty() ? "" : ", ") + device_name(c, d);
        doc.tracks.push_back({.process = stages_process,
                              .track = tracks++,
                              .name = "pipeline " + std::to_string(p) + " stage " +
                                      std::to_string(s) + " (" + devices + ")" + since});
      }
    shown = &plan;
  }
  return first_track;
}

/// Each step's ops on its stages' tracks, and what ends it on its devices' tracks (the
/// job's own track for what belongs to no device).
void add_step_spans(runtime::trace_document& doc, const runtime::cluster& c,
                    const std::vector<step_result>& steps, const std::vector<int>& first_track) {
  const int job_track = static_cast<int>(c.devices.size());
  std::set<int> device_tracks;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& r = steps[i];
    const std::vector<std::pair<std::string, double>> step_arg{{"step", double(r.step)}};
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const auto& op = r.ops[k];
      const runtime::schedule_op sop{static_cast<runtime::op_kind>(op.kind), op.micro_batch};
      doc.spans.push_back({.name = runtime::to_string(sop),
                           .process = stages_process,
                           .track = first_track[i] + r.op_stage[k],
                           .start_s = op.start,
                           .end_s = op.end,
                           .args = step_arg});
    }
    for (const auto& f : r.finish) {
      const int track = f.device >= 0 ? f.device : job_track;
      if (device_tracks.insert(track).second)
        doc.tracks.push_back({.process = devices_process,
                              .track = track,
                              .name = f.device >= 0 ? device_name(c, f.device) : "job"});
      doc.spans.push_back({.name = f.name,
                           .process = devices_process,
                           .track = track,
                           .start_s = f.start_s,
                           .end_s = f.end_s,
                           .args = step_arg});
    }
  }
}

/// Each transfer on its link's track. A WAN pipe carries several device pairs, so its track
/// is named by its regions and its spans by their devices.
void add_link_spans(runtime::trace_document& doc, const runtime::cluster& c,
                    const std::vector<link_sample>& samples) {
  std::set<int> links;
  for (const auto& s : samples) {
    const std::string ends = device_name(c, s.from) + " -> " + device_name(c, s.to);
    const int from_region = region_of(c, s.from), to_region = region_of(c, s.to);
    const bool wan = from_region != to_region && from_region >= 0 && to_region >= 0;
    if (links.insert(s.link).second)
      doc.tracks.push_back({.process = links_process,
                            .track = s.link,
                            .name = wan ? "link " + c.regions[size_t(from_region)].name + " -> " +
                                              c.regions[size_t(to_region)].name + " (WAN pipe)"
                                        : "link " + ends});
    const std::string what =
        s.kind == messages::tensor_kind::activation ? "send act m" : "send grad m";
    doc.spans.push_back(
        {.name = what + std::to_string(s.micro_batch) + (wan ? " " + ends : ""),
         .process = links_process,
         .track = s.link,
         .start_s = s.start,
         .end_s = s.drained,
         .args = {{"step", double(s.step)}, {"bytes", s.bytes}, {"arrival_us", s.end * 1e6}}});
  }
}

} // namespace

runtime::trace_document run_trace_document(const std::vector<runtime::plan>& plans,
                                           const runtime::cluster& c,
                                           const std::vector<step_result>& steps,
                                           const std::vector<link_sample>& samples) {
  runtime::trace_document doc;
  doc.processes = {"stages", "devices", "links"};
  const auto first_track = add_stage_tracks(doc, plans, c, steps);
  add_step_spans(doc, c, steps, first_track);
  add_link_spans(doc, c, samples);
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
