#pragma once

#include "runtime/cluster/link_timeline.hpp"
#include "runtime/io/metrics_writer.hpp"
#include "runtime/io/trace_writer.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::tools {

/// Where a run shows the events of its fluctuation and fault script ([inject] script):
/// one spdlog info line each, a row of events.csv (step, time_s, event) beside metrics.csv,
/// and an instant in trace.json. An event belongs to the step during which it happens
/// (its time is before the step's end), or to the step it names.
class script_log {
public:
  /// `script` resolved (link_timeline::resolve_steps); nothing is written without events.
  script_log(const std::filesystem::path& dir, const runtime::link_timeline& script,
             const runtime::cluster& c);

  /// Adds events injected into the running job (`deepcee inject`) that took effect at a
  /// step's start (their times resolved): reported like the script's own.
  void injected(const runtime::link_timeline& due);
  /// Reports the events up to `end_s` not reported yet. A kill among them is the
  /// coordinator's to answer (a recovery, or the job's end), not the log's.
  void step_done(int step, double end_s);
  /// Also tells `f` of each event as it is reported.
  void on_event(std::function<void(int step, const runtime::described_event&)> f) {
    on_event_ = std::move(f);
  }
  /// The reported events, for the trace.
  const std::vector<runtime::trace_instant>& instants() const { return instants_; }
  bool empty() const { return events_.empty(); }

  static const std::vector<std::string>& columns();

private:
  void open_csv();

  std::filesystem::path dir_;
  runtime::cluster cluster_;
  std::vector<runtime::described_event> events_;
  size_t next_ = 0;
  std::optional<runtime::metrics_writer> csv_;
  std::vector<runtime::trace_instant> instants_;
  std::function<void(int, const runtime::described_event&)> on_event_;
};

} // namespace deepcee::tools
