#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <cstddef>
#include <string>
#include <string_view>

/// A job snapshot as one line of JSON. The inspection endpoint serves it (/api/snapshot,
/// each line of /api/stream), and `deepcee inspect --json` prints it. Absent values (no loss
/// in dry mode, no validation yet) are null.
///
/// The text arrives over the network, so reading it is bounded. It reads at most
/// max_snapshot_bytes, and at most max_snapshot_items entries in a list. Strings have at
/// most max_snapshot_string characters, and nesting is at most max_snapshot_depth deep.
/// Anything else is an input_error naming `source` and the JSON path. For example:
///
///     {"format": "deepcee-snapshot", "version": 7, "job": "...", "step": 7, "loss": 4.1,
///      "val_loss": null, "loss_history": [...], "stages": [{"pipeline": 0, "stage": 0,
///      "ops": [{"kind": "F", "micro": 0, "start_s": 0.0, "end_s": 0.01}], ...}], ...}
namespace deepcee::runtime {

inline constexpr size_t max_snapshot_bytes = size_t{16} << 20;
inline constexpr size_t max_snapshot_items = 65536;
inline constexpr size_t max_snapshot_string = 4096;
inline constexpr size_t max_snapshot_depth = 8;

/// One line, no newline.
std::string job_snapshot_to_json(const job_snapshot& s);

/// The run's history as one JSON object: "loss", "validation", "real_samples_per_s" and
/// "emulated_samples_per_s" as lists of [step, value], and "links" by link name (bandwidth
/// in bytes/s). Empty lists when there is none yet (`h` null).
std::string run_history_to_json(const run_history* h);

job_snapshot job_snapshot_from_json(std::string_view text, const std::string& source);

} // namespace deepcee::runtime
