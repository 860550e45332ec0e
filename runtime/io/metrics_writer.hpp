#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace deepcee::runtime {

using metric_value = std::variant<int64_t, double, std::string>;

/// One row: column names with their values, in column order.
using metric_row = std::vector<std::pair<std::string, metric_value>>;

enum class metrics_format { csv, jsonl };

/// "csv" | "jsonl"; throws input_error naming `source` otherwise.
metrics_format parse_metrics_format(std::string_view name,
                                    const std::filesystem::path& source = "metrics_format");

/// Appends rows of metrics to a file, flushed after each row so that a crashed or killed
/// run keeps every row it reported and a live run can be plotted while it trains.
///
/// CSV: the first row fixes the header (written once). A later row may leave columns out
/// (an empty cell, e.g. `val_loss` on steps without evaluation) but may not add new ones,
/// since the header is already on disk; adding one throws std::invalid_argument.
/// JSONL: one JSON object per line with the row's own columns; NaN and infinities, which
/// JSON cannot spell, are written as null.
/// Doubles are written in the shortest form that reads back to the same value.
class metrics_writer {
public:
  /// Creates or truncates `file`; with `append`, keeps what is there and (CSV) takes the
  /// header from its first line, for a resumed run. Throws input_error naming the file
  /// when it cannot be opened for writing.
  metrics_writer(const std::filesystem::path& file, metrics_format format, bool append = false);

  void write(const metric_row& row);
  /// CSV: writes the header now, so that a file with no row yet (an eval file before any
  /// validation, a run stopped before its first step) still says what its columns are.
  /// Nothing when the header is already there (a resumed file) or for JSONL.
  void declare_columns(const std::vector<std::string>& columns);

  const std::filesystem::path& path() const { return path_; }
  metrics_format format() const { return format_; }

private:
  void write_csv(const metric_row& row);
  void write_jsonl(const metric_row& row);

  std::filesystem::path path_;
  metrics_format format_;
  std::ofstream out_;
  std::vector<std::string> columns_; ///< CSV header, empty until written
};

} // namespace deepcee::runtime
