#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::runtime {

/// A row of the trace: a thread `track` of process `process` (Perfetto shows each as a row
/// under its process).
struct trace_track {
  int process = 0;
  int track = 0;
  std::string name;
};

/// One interval ("X" event) on a track, in seconds; `args` are shown beside it.
struct trace_span {
  std::string name;
  int process = 0;
  int track = 0;
  double start_s = 0;
  double end_s = 0;
  std::vector<std::pair<std::string, double>> args;
};

/// A moment that concerns the whole trace (an injected event): an "i" event of global scope,
/// which Perfetto draws as a line across every track.
struct trace_instant {
  std::string name;
  double at_s = 0;
};

/// What a trace holds, neutral of who made it (the simulator, a run): processes by index
/// (their names), the tracks grouped under them, and the spans.
struct trace_document {
  std::vector<std::string> processes;
  std::vector<trace_track> tracks;
  std::vector<trace_span> spans;
  std::vector<trace_instant> instants;
};

/// Chrome / Perfetto trace JSON ({"traceEvents": [...]}, times in microseconds): an "M"
/// event naming each process and track, an "X" event per span with its args.
void write_trace(const trace_document& doc, std::ostream& out);

} // namespace deepcee::runtime
