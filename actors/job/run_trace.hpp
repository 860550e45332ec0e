#pragma once

#include "actors/protocol/protocol.hpp"
#include "runtime/plan/plan.hpp"

#include <ostream>
#include <vector>

namespace deepcee::actors {

/// Chrome / Perfetto trace JSON ({"traceEvents": [...]}, microseconds of virtual time) of
/// a run: one track per stage (its F, B and W ops) and one per link (each transfer from
/// the link's start to its last byte), so the run can be laid beside the simulator's trace.
void write_run_trace(std::ostream& out, const runtime::plan& plan,
                     const std::vector<step_result>& steps,
                     const std::vector<link_sample>& samples);

} // namespace deepcee::actors
