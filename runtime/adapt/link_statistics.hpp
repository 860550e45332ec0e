#pragma once

#include <cstdint>
#include <map>

/// The run's per-link statistics, as the adapter keeps them from its link samples (the
/// trace's and `deepcee run`'s link table): transfers, bytes, busy time, mean delay and the
/// observed bandwidth of each link the job's transfers took.
namespace deepcee::runtime {

/// One transfer on a link, as its sender reported it.
struct link_transfer {
  int link = 0; ///< the FIFO resource it took
  int from = 0; ///< devices
  int to = 0;
  double bytes = 0;
  double send_s = 0;    ///< when the sender handed it over
  double start_s = 0;   ///< when it began to drain
  double drained_s = 0; ///< when its last byte left
  double arrival_s = 0; ///< when it arrived
};

/// One link's transfers so far.
struct link_totals {
  int link = 0;
  int from = 0; ///< the devices of its first transfer
  int to = 0;
  int64_t transfers = 0;
  double bytes = 0;
  double busy_s = 0;  ///< sum of drain times
  double delay_s = 0; ///< sum of arrival - send (queueing included)

  double mean_delay_s() const {
    return transfers > 0 ? delay_s / static_cast<double>(transfers) : 0;
  }
  /// Bytes over busy time as observed (0 before any time was busy).
  double bandwidth_Bps() const { return busy_s > 0 ? bytes / busy_s : 0.0; }
};

class link_statistics {
public:
  void add(const link_transfer& t);
  /// By link id.
  const std::map<int, link_totals>& links() const { return links_; }

private:
  std::map<int, link_totals> links_;
};

} // namespace deepcee::runtime
