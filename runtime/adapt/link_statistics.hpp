#pragma once

#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/plan/plan.hpp"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

/// What the job's transfers have carried on each directed device pair, and what the
/// inspector shows of the links: the monitor's estimates beside those totals.
namespace deepcee::runtime {

/// One pair's transfers so far.
struct link_totals {
  int64_t transfers = 0;
  double bytes = 0;
};

class link_statistics {
public:
  void add(int from, int to, double bytes);
  /// By directed device pair (from, to).
  const std::map<std::pair<int, int>, link_totals>& links() const { return links_; }

private:
  std::map<std::pair<int, int>, link_totals> links_;
};

/// A link as the inspector shows it: the monitor's estimate (its medians; the plan's
/// figures while it has no sample) beside what the plan assumed and what was carried.
struct link_report {
  int from = 0;
  int to = 0;
  link_params assumed;
  link_params estimated;
  long samples = 0; ///< the monitor's samples behind `estimated` (0: the plan's figures)
  bool drifted = false;
  link_totals carried;
};

/// Every directed pair `in_force` sends on (measured_pairs: both directions of each stage
/// boundary), in pair order. One source for the inspector, `/metrics` and the web page.
std::vector<link_report> link_reports(const environment_monitor& monitor,
                                      const link_statistics& stats, const plan& in_force);

} // namespace deepcee::runtime
