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

} // namespace deepcee::tools
