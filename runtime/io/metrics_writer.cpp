#include "runtime/io/metrics_writer.hpp"

#include "runtime/base/errors.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace deepcee::runtime {

namespace fs = std::filesystem;

namespace {

std::string shortest(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x > 0 ? "inf" : "-inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, result.ptr);
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos)
    return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"')
      quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string csv_value(const metric_value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v))
    return shortest(*d);
  return csv_cell(std::get<std::string>(v));
}

/// Splits a header line written by this class (names quoted only when they need it).
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

} // namespace

metrics_format parse_metrics_format(std::string_view name, const fs::path& source) {
  if (name == "csv")
    return metrics_format::csv;
  if (name == "jsonl")
    return metrics_format::jsonl;
  fail_input(source, 0,
             "metrics format must be \"csv\" or \"jsonl\", got \"" + std::string(name) + "\"");
}

metrics_writer::metrics_writer(const fs::path& file, metrics_format format, bool append)
    : path_(file), format_(format) {
  if (append && format == metrics_format::csv) {
    std::ifstream existing(file);
    std::string first;
    if (existing && std::getline(existing, first) && !first.empty())
      columns_ = split_csv_line(first);
  }
  out_.open(file, append ? std::ios::app : std::ios::trunc);
  if (!out_)
    fail_input(file, 0, "cannot open metrics file for writing");
}

void metrics_writer::write(const metric_row& row) {
  if (format_ == metrics_format::csv)
    write_csv(row);
  else
    write_jsonl(row);
  out_.flush();
  if (!out_)
    fail_input(path_, 0, "write to metrics file failed");
}

void metrics_writer::declare_columns(const std::vector<std::string>& columns) {
  if (format_ != metrics_format::csv || !columns_.empty())
    return;
  for (size_t i = 0; i < columns.size(); ++i) {
    columns_.push_back(columns[i]);
    out_ << (i ? "," : "") << csv_cell(columns[i]);
  }
  out_ << '\n';
  out_.flush();
  if (!out_)
    fail_input(path_, 0, "write to metrics file failed");
}

void metrics_writer::write_csv(const metric_row& row) {
  if (columns_.empty()) {
    for (size_t i = 0; i < row.size(); ++i) {
      columns_.push_back(row[i].first);
      out_ << (i ? "," : "") << csv_cell(row[i].first);
    }
    out_ << '\n';
  }
  std::vector<const metric_value*> cells(columns_.size(), nullptr);
  for (const auto& [name, value] : row) {
    size_t i = 0;
    while (i < columns_.size() && columns_[i] != name)
      ++i;
    if (i == columns_.size())
      throw std::invalid_argument("metrics_writer: column '" + name +
                                  "' is not in the CSV header of " + path_.string());
    cells[i] = &value;
  }
  for (size_t i = 0; i < cells.size(); ++i)
    out_ << (i ? "," : "") << (cells[i] ? csv_value(*cells[i]) : std::string());
  out_ << '\n';
}

void metrics_writer::write_jsonl(const metric_row& row) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [name, value] : row) {
    if (const auto* i = std::get_if<int64_t>(&value))
      object[name] = *i;
    else if (const auto* d = std::get_if<double>(&value))
      object[name] = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json();
    else
      object[name] = std::get<std::string>(value);
  }
  out_ << object.dump() << '\n';
}

} // namespace deepcee::runtime
