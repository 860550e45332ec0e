#pragma once

#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/cluster/cluster.hpp"

#include <map>
#include <optional>
#include <utility>
#include <vector>

/// Real transfers between node processes, as the monitor reads them.
///
/// In wall time a message between two node processes is timed by two clocks: its sender's
/// when the stage sent it, its receiver's when CAF deserialized its last byte. The gap holds
/// more than the link's drain:
///   - a cost per message: the path's latency, the hops through both nodes' gates and
///     CAF, the host's scheduling. Each node pair's is calibrated on its first messages
///     against the cluster's bandwidth: the median of (time - bytes / bandwidth) over
///     `calibration` messages that waited behind no other, after `warm_up` left out (TCP's
///     slow start, first allocations). It may be negative: a path that passes a message
///     faster than its rate (a token bucket's burst) makes up for the rest. Their spread
///     (1.4826 x the median absolute deviation: a standard deviation that outliers do not
///     move) is the pair's noise. A
///     link slower than the cluster file says from the start is the profile's to find; the
///     monitor follows what changes after;
///   - the wait behind earlier messages of the same node pair: one connection carries them
///     in order, so a message's bytes start to arrive when it was sent plus that cost, or
///     when the previous one had arrived, whichever is later;
///   - the error between the two clocks: each node's epoch is the coordinator's to within a
///     bound (exactly on one host, else half the round trip that set it).
/// A drain is then read as the cluster's bandwidth says unless it differs from that by more
/// than `noise_factor` times the noise plus the clocks' bound, and then by what exceeds
/// them: so the host's jitter and the clocks cannot make a link drift, and a drop shows at
/// once, a little smaller than it is.
///
/// A message too small to tell a drift from that allowance cannot show that a slow link is
/// back: were the link at `distinguishable` of its bandwidth, it would still read as the
/// cluster says. So once a pair has read slow `drift_samples` times in a row (as the
/// monitor's drift rule counts), such a message is left out until larger ones read it calm
/// as often: it cannot clear a drift that larger messages found (a plan that compresses its
/// transfers over a cut path would otherwise "see" the path recover). Before that, it still
/// counts as calm, since a drop as large as its allowance would have shown on it: a calm
/// pair's stray slow message stays a stray. A slower drain than the allowance counts
/// whatever the message's size.
namespace deepcee::runtime {

/// One device pair's share of a message (link_sample's part of a transfer).
struct real_part {
  int from = 0;
  int to = 0;
  double bytes = 0;
};

/// One message from node process `from_node` to `to_node` as its receiver saw it: sent at
/// `send_s` on the sender's clock, arrived at `arrival_s` on the receiver's (seconds since
/// the job's epoch).
struct real_message {
  int from_node = 0;
  int to_node = 0;
  std::vector<real_part> parts;
  double send_s = 0;
  double arrival_s = 0;
};

struct wall_transfer_options {
  int warm_up = 2;         ///< each node pair's first messages, left out
  int calibration = 8;     ///< messages that set its cost per message and noise
  double noise_factor = 4; ///< how many times its noise a drain must differ by
  /// The bandwidth ratio a message must be able to show to count when it reads as the
  /// cluster says on a pair that reads slow: the drift band's entering edge
  /// (drift_band::enter_low).
  double distinguishable = 0.67;
  /// Readings in a row that make a pair slow, or calm again (drift_band::min_samples).
  int drift_samples = 8;
};

class wall_transfers {
public:
  /// `clock_error_s`: by node, the bound on that node's epoch against the coordinator's
  /// (a node not listed: the largest bound given).
  wall_transfers(cluster c, std::vector<double> clock_error_s, wall_transfer_options o = {});

  /// The observations of `m`'s parts (each with the message's bandwidth; latency the
  /// cluster's for the pair), or none: within one node, or while its node pair calibrates.
  std::vector<link_observation> observe(const real_message& m);

  /// The bound on the error of a drain between `from_node` and `to_node`.
  double clock_error_s(int from_node, int to_node) const;
  /// The calibrated cost per message from `from_node` to `to_node`, once known.
  std::optional<double> message_cost_s(int from_node, int to_node) const;
  /// Its noise (s), once known.
  std::optional<double> noise_s(int from_node, int to_node) const;
  /// The smallest message from `from_node` to `to_node` that counts when it reads as the
  /// cluster's `bandwidth_Bps` says (see above): what an active probe must send at least to
  /// clear a drift. 0 while the pair calibrates.
  double informative_bytes(int from_node, int to_node, double bandwidth_Bps) const;

private:
  struct node_pair {
    double last_arrival_s = -1e300;
    int seen = 0;
    std::vector<double> costs; ///< while calibrating
    std::optional<double> cost_s;
    double noise_s = 0;
    bool slow = false; ///< read slow drift_samples times in a row, not calm as often since
    int run = 0;       ///< readings in a row that point to the other state
  };
  /// Whether `pair` reports a message that read slow (`slower`) or calm, and whether a calm
  /// one can show the link is back (`informative`); follows the pair's slow state.
  bool reports(node_pair& pair, bool slower, bool informative) const;
  /// How far a drain between the two nodes may lie from the expected and still read as it.
  double allowance_s(const node_pair& pair, int from_node, int to_node) const;
  /// Adds `m` (of `bytes`, queued or not) to `pair`'s calibration.
  void calibrate(node_pair& pair, const real_message& m, double bytes, bool queued) const;

  cluster cluster_;
  std::vector<double> clock_error_s_;
  double largest_error_s_ = 0;
  wall_transfer_options options_;
  std::map<std::pair<int, int>, node_pair> pairs_;
};

} // namespace deepcee::runtime
