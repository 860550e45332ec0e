#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

/// A bound on log lines (a token bucket): `burst` lines at once, then one per `interval`.
/// What does not fit is counted, and the next line that fits says how many were left out, so
/// strangers who knock without end cannot fill a node's log or disk. Pure: the caller gives
/// the time.
namespace deepcee::transport {

class log_budget {
public:
  using clock = std::chrono::steady_clock;

  log_budget(int burst, std::chrono::milliseconds interval)
      : burst_(burst), interval_(interval), lines_(burst) {}

  /// The line to write now (with the count of those left out before it), or none.
  std::optional<std::string> admit(const std::string& line, clock::time_point now) {
    if (started_ && interval_.count() > 0) {
      const auto refill = (now - last_) / interval_;
      if (refill > 0) {
        lines_ = static_cast<int>(std::min<int64_t>(burst_, lines_ + refill));
        last_ += refill * interval_;
      }
    } else {
      started_ = true;
      last_ = now;
    }
    if (lines_ <= 0) {
      ++left_out_;
      return std::nullopt;
    }
    --lines_;
    if (left_out_ == 0)
      return line;
    const auto out = line + " (" + std::to_string(left_out_) + " similar line(s) left out)";
    left_out_ = 0;
    return out;
  }
  uint64_t left_out() const { return left_out_; }

private:
  int burst_;
  std::chrono::milliseconds interval_;
  int lines_;
  bool started_ = false;
  clock::time_point last_{};
  uint64_t left_out_ = 0;
};

} // namespace deepcee::transport
