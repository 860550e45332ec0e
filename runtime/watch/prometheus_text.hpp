#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <string>
#include <string_view>

/// A job snapshot in Prometheus' text exposition format (version 0.0.4), as the inspection
/// endpoint serves it at /metrics. Every family has a HELP and a TYPE line, its name starts
/// with `deepcee_`, and label values are escaped (`\\`, `\"`, `\n`). A value the snapshot
/// does not hold (no loss in dry mode, no validation yet, no emulated clock in wall time)
/// leaves its family without a sample rather than with a made-up one.
///
/// Counters (`_total`) are the job's totals so far: bytes and transfers per link, dropped
/// messages and frames, and the decisions and events the snapshot lists.
namespace deepcee::runtime {

std::string job_snapshot_to_prometheus(const job_snapshot& s);

/// A label value with `\`, `"` and newlines escaped as the format asks.
std::string prometheus_label_value(std::string_view v);

/// A sample value: whole numbers as integers, others as the shortest text that reads back
/// as the same double; NaN, +Inf, -Inf.
std::string prometheus_number(double v);

} // namespace deepcee::runtime
