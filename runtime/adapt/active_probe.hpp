#pragma once

#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"

#include <set>
#include <utility>
#include <vector>

/// Active probes: how the adapter keeps measuring what the plan in force no longer uses.
///
/// The monitor learns a link's state from the plan's own transfers. The adapter may answer
/// a drifted link or device with a plan that leaves it out (a re-plan away from a slow link,
/// a slow device left out). Then nothing measures it any more. Its drift would never clear,
/// and the job would never return to the better plan. So while a drifted link or device is
/// out of the plan in force, the adapter sends a small probe on it every `every_steps` steps,
/// at a step boundary. The monitor takes what the probe saw as it takes the plan's transfers.
namespace deepcee::runtime {

struct probe_options {
  /// Steps between two rounds while something needs probing. With 2, a drift clears at
  /// most 2 steps after the link or device recovers, and the policy then decides at once.
  /// A round holds the step boundary for at most `budget` of a step. So probing costs at
  /// most budget / 2 of the run's time while a disturbance lasts, and nothing otherwise.
  int every_steps = 2;
  /// Transfers per link (ops per device) and round, back to back: the monitor's
  /// drift_band::min_samples, so that one round can clear a drift (or confirm it) on its own.
  int transfers = 3;
  /// A probe's size, between these bounds. It is chosen so that the round's transfers, one
  /// after another, drain in `budget` of the last step at the links' estimated bandwidths
  /// (each link's share split evenly). The floor keeps a probe a full packet, so that its
  /// bandwidth measures a drain, not a header's latency. The ceiling bounds what a probe can
  /// cost on a link that got faster. A round thus drains in max(budget x step, transfers x
  /// links x min_bytes / the estimated bandwidth). It holds a step by that, less the plan's
  /// first F, at most (run_probes). So 1% every 2 steps costs at most 0.5% of the run while
  /// a disturbance lasts.
  double min_bytes = 1024;
  double max_bytes = 256 * 1024;
  double budget = 0.01;
};

struct link_probe {
  int from = 0;
  int to = 0;
  double bytes = 0; ///< each transfer's
  int transfers = 0;
  friend bool operator==(const link_probe&, const link_probe&) = default;
};

/// A device re-times `ops` benchmark ops, one after another (run_probes).
struct device_probe {
  int device = 0;
  int ops = 0;
  friend bool operator==(const device_probe&, const device_probe&) = default;
};

/// What the adapter asks for at one step boundary.
struct probe_round {
  std::vector<link_probe> links;
  std::vector<device_probe> devices;
  /// How long after the boundary the plan can send its first transfer at the earliest
  /// (environment_monitor::earliest_send_s): a probe that has drained by then delays
  /// nothing.
  double slack_s = 0;
  bool empty() const { return links.empty() && devices.empty(); }
  friend bool operator==(const probe_round&, const probe_round&) = default;
};

/// What a round saw. `transfers` are samples of the same form as the plan's transfers give.
/// `slowdowns` holds each probed device's op time over the profile's (the monitor's
/// slowdown). `hold_s` is how long the round holds the step boundary: the next step starts
/// that much later.
struct probe_outcome {
  std::vector<link_observation> transfers;
  std::vector<std::pair<int, double>> slowdowns;
  double hold_s = 0;
};

/// The directed device pairs whose transfers the plan makes in a step (each pipeline's
/// activations and gradients between consecutive stages): what the plan measures.
std::set<std::pair<int, int>> measured_pairs(const plan& p);

/// The drifted links and devices that `in_force` does not measure (a link none of its
/// transfers crosses; a device it leaves out, or whose stage's time another device's share
/// sets: environment_monitor::measured_devices), sized for a step of `step_s`
/// (probe_options).
/// With `watch_all`, every link and device the monitor has seen that `in_force` does not
/// measure, drifted or not (a drift that has just ended, before the policy restores).
probe_round probes_needed(const environment_monitor& monitor, const plan& in_force, double step_s,
                          const probe_options& options = {}, bool watch_all = false);

/// Runs `round` at the step boundary `at_s` under `timeline` (the script in force, step
/// events resolved). Probes use the same link model as the job's transfers.
///
/// A link probe sends its transfers back to back from `from` to `to`. Each occupies the
/// pair's path (runtime::path_between: node interfaces, WAN path or a node's internal link)
/// while it drains. It drains at the pair's bandwidth in force, capped by the interfaces,
/// and arrives after the latency in force.
///
/// A device probe runs its ops one after another. Each op is the F of the first layer for
/// one micro-batch (`micro_batch_size` samples), at the device's rate in force. Each gives
/// the monitor its time over the profile's.
///
/// The round holds the boundary only where it costs the plan. A link probe may share a
/// resource with a path between two devices of `in_force`. It then holds the boundary until
/// its last transfer has drained, less the round's slack, as the plan sends nothing before.
/// So a round delays a step by at most its transfers' drain beyond the plan's first F. It
/// does not delay it at all when they fit in that F. A device probe on a device of
/// `in_force` holds the boundary for its ops, since the device runs them before its first op.
/// A left-out device's probe holds nothing.
probe_outcome run_probes(const cluster& c, const profile_table& profile, const plan& in_force,
                         const link_timeline& timeline, const probe_round& round, double at_s);

} // namespace deepcee::runtime
