#pragma once

#include "runtime/io/trace_writer.hpp"
#include "runtime/sim/simulator.hpp"

#include <ostream>

namespace deepcee::runtime {

/// Chrome / Perfetto trace JSON ({"traceEvents": [...]}, times in microseconds). There is
/// one process per node (its devices' tracks and its links' tracks) and one for the WAN
/// pipes. There is one thread per device and per link. Their "X" events are named "F3",
/// "B3", "W3", "send act m3", "send grad m3", "allreduce L2-5", "optimizer".
/// The same as a neutral document (runtime/io/trace_writer.hpp).
trace_document chrome_trace_document(const sim_result& result, const cluster& c);

void write_chrome_trace(const sim_result& result, const cluster& c, std::ostream& out);

} // namespace deepcee::runtime
