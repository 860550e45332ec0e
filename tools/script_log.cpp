#include "tools/script_log.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <spdlog/spdlog.h>

namespace deepcee::tools {

script_log::script_log(const std::filesystem::path& dir, const runtime::link_timeline& script,
                       const runtime::cluster& c)
    : dir_(dir), cluster_(c), events_(script.describe(c)) {
  std::erase_if(events_, [](const auto& e) { return e.at_step.has_value(); });
  if (!events_.empty())
    open_csv();
}

void script_log::open_csv() {
  if (csv_)
    return;
  csv_.emplace(dir_ / "events.csv", runtime::metrics_format::csv);
  csv_->declare_columns(columns());
}

void script_log::injected(const runtime::link_timeline& due) {
  auto more = due.describe(cluster_);
  std::erase_if(more, [](const auto& e) { return e.at_step.has_value(); });
  if (more.empty())
    return;
  open_csv();
  events_.insert(events_.end(), more.begin(), more.end());
  // The unreported ones in time order; at one time, the script's before the injected.
  std::stable_sort(events_.begin() + static_cast<std::ptrdiff_t>(next_), events_.end(),
                   [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
}

const std::vector<std::string>& script_log::columns() {
  static const std::vector<std::string> c{"step", "time_s", "event"};
  return c;
}

void script_log::step_done(int step, double end_s) {
  for (; next_ < events_.size() && events_[next_].at_s < end_s; ++next_) {
    const auto& e = events_[next_];
    spdlog::info("step {}: injected at {:.3f} s: {}", step, e.at_s, e.text);
    csv_->write({{columns()[0], int64_t{step}}, {columns()[1], e.at_s}, {columns()[2], e.text}});
    instants_.push_back({"inject: " + e.text, e.at_s});
    if (on_event_)
      on_event_(step, e);
  }
}

} // namespace deepcee::tools
