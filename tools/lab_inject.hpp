#pragma once

#include "runtime/lab/lab_script.hpp"
#include "tools/lab_network.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

namespace deepcee::tools {

/// Applies a job's script to a running lab in wall time: each event when its time has come
/// (seconds from the run's start) or the job has started its step, logged as a row of
/// lab-events.csv with the wall time and the job's step then. The job is not told.
class lab_injector {
public:
  lab_injector(const lab_context& ctx, const lab_state& state,
               std::vector<runtime::lab_event> events, const std::filesystem::path& csv);

  /// Applies what is due at `elapsed_s` with the job at `step` (steps done); `pids`: each
  /// node's process (0: gone).
  void poll(double elapsed_s, int step, const std::vector<int>& pids);
  /// Puts the lab back as `lab up` left it: rates, interfaces up, CPU limits.
  void restore();

private:
  std::string apply(const runtime::lab_event& e, const std::vector<int>& pids);
  std::string reshape(const runtime::lab_event& e);
  std::optional<double>& rate_of(const runtime::lab_port_ref& p);
  const runtime::lab_port& port(const runtime::lab_port_ref& p) const;

  lab_context ctx_;
  lab_state state_;
  std::vector<runtime::lab_event> events_;
  std::vector<bool> applied_;
  std::map<std::pair<int, int>, std::optional<double>> rates_; ///< the rates now, by port
  std::ofstream csv_;
};

} // namespace deepcee::tools
