#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace deepcee::tools {

/// A progress bar on a terminal ("[#####.....] 120/600 | loss 2.31 | 5.2k tok/s | ETA
/// 3m12s", redrawn in place), plain lines every `plain_every` steps when stdout is not a
/// terminal (logs, CI).
class progress_bar {
public:
  progress_bar(int first, int total, std::FILE* out = stdout);

  /// `done` units complete; `fields` is shown after the counter.
  void update(int done, const std::string& fields);
  /// A line of its own that the bar does not overwrite.
  void message(const std::string& line);
  void finish();

  static std::string duration(double seconds);

private:
  std::string bar(int done) const;

  int first_, total_;
  std::FILE* out_;
  bool terminal_;
  int plain_every_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// A status line for work of unknown length (the planner's search). It shows nothing during
/// the first `quiet` seconds. Then, on a terminal, it redraws one line in place, at most
/// every 0.1 s. Elsewhere it prints a plain line when the text's first word changes, or
/// every `plain_every` seconds.
class progress_line {
public:
  explicit progress_line(std::FILE* out = stderr, double quiet_s = 1.0, double plain_every_s = 5.0);

  void update(const std::string& text);
  /// Clears the in-place line (or does nothing): what follows starts on a fresh line.
  void finish();
  bool shown() const { return shown_; }

private:
  double elapsed() const;

  std::FILE* out_;
  bool terminal_;
  double quiet_s_, plain_every_s_;
  bool shown_ = false, drawn_ = false;
  double last_s_ = -1e300;
  std::string last_phase_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace deepcee::tools
