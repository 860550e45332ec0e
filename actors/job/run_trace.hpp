#pragma once

#include "actors/protocol/protocol.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/io/trace_writer.hpp"
#include "runtime/plan/plan.hpp"

#include <ostream>
#include <vector>

namespace deepcee::actors {

/// A run's trace (virtual seconds; real ones in wall mode) as a neutral document
/// (runtime/io/trace_writer.hpp), to lay beside the simulator's. It has three processes.
/// Process "stages" has one track per stage of each plan in force, with its F, B and W ops
/// (args: step). `plans[k]` ran `steps[k]`, and the last plan the steps after it. A
/// re-plan's stages get tracks of their own, named "... from step N".
/// Process "devices" has one track per device, named as the cluster names it, with its
/// all-reduce buckets and optimizer step. In wall mode one "allreduce + optimizer" span per
/// step on a "job" track stands for them.
/// Process "links" has one track per link, named by its endpoints ("link cloud0/1 ->
/// edge0/0"). Each transfer the adapter recorded spans from the link's start to its last
/// byte (args: step, bytes, arrival_us).
runtime::trace_document run_trace_document(const std::vector<runtime::plan>& plans,
                                           const runtime::cluster& c,
                                           const std::vector<step_result>& steps,
                                           const std::vector<link_sample>& samples);

/// `injected`: the script's events that happened during the traced steps, drawn as instants.
void write_run_trace(std::ostream& out, const std::vector<runtime::plan>& plans,
                     const runtime::cluster& c, const std::vector<step_result>& steps,
                     const std::vector<link_sample>& samples,
                     const std::vector<runtime::trace_instant>& injected = {});

} // namespace deepcee::actors
