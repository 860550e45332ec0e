#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <cstddef>
#include <string>
#include <string_view>

/// A job snapshot as one line of JSON, as the inspection endpoint serves it (/api/snapshot,
/// each line of /api/stream) and `deepcee inspect --json` prints it:
///
///     {"format": "deepcee-snapshot", "version": 7, "job": "...", "step": 7, "loss": 4.1,
///      "val_loss": null, "loss_history": [...], "stages": [{"pipeline": 0, "stage": 0,
///      "ops": [{"kind": "F", "micro": 0, "start_s": 0.0, "end_s": 0.01}], ...}], ...}
///
/// Absent values (no loss in dry mode, no validation yet) are null. The text arrives over
/// the network, so reading it is bounded: at most max_snapshot_bytes, max_snapshot_items
/// entries in a list, strings of at most max_snapshot_string characters, nesting at most
/// max_snapshot_depth deep; anything else is an input_error naming `source` and the JSON path.
namespace deepcee::runtime {

inline constexpr size_t max_snapshot_bytes = size_t{16} << 20;
inline constexpr size_t max_snapshot_items = 65536;
inline constexpr size_t max_snapshot_string = 4096;
inline constexpr size_t max_snapshot_depth = 8;

/// One line, no newline.
std::string job_snapshot_to_json(const job_snapshot& s);

job_snapshot job_snapshot_from_json(std::string_view text, const std::string& source);

} // namespace deepcee::runtime
