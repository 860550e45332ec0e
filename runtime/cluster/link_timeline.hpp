#pragma once

#include "runtime/cluster/cluster.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// A change to the network from its time on. It applies in both directions to every device
/// pair (x, y) with x inside `a` and y inside `b`. With `any_peer`, it applies to every pair
/// with one end inside `a`. A set bandwidth or latency replaces what applied before, and a
/// scale multiplies it. A jitter makes every later transfer's bandwidth a seeded random
/// factor in [1 - j, 1 + j] of it (0 ends the jitter). A field left out keeps whatever
/// applied before. Later changes (by time, then by file order) win over earlier ones,
/// whatever their specificity. The timeline is a script of what happens to the network, not
/// a second set of defaults.
struct link_change {
  double at_s = 0;
  /// Set: the event happens when step `*at_step` (from 0) starts, which a run resolves to a
  /// time once it knows (resolve_steps); `at_s` means nothing until then.
  std::optional<int> at_step;
  link_endpoint a;
  link_endpoint b;
  bool any_peer = false;
  std::optional<double> bandwidth_Bps;
  std::optional<double> latency_s;
  std::optional<double> bandwidth_scale;
  std::optional<double> latency_scale;
  std::optional<double> jitter;
  uint64_t seed = 0;
  int64_t line = 0;
  friend bool operator==(const link_change&, const link_change&) = default;
};

/// From its time on, device `device` computes `slowdown` times slower (1 restores it).
struct device_change {
  double at_s = 0;
  std::optional<int> at_step;
  int device = 0;
  double slowdown = 1;
  int64_t line = 0;
  friend bool operator==(const device_change&, const device_change&) = default;
};

/// stop: the node's devices start no work until a resume; kill: the node is gone and the
/// job fails (there is no recovery yet); partition: the node's network interface goes down
/// until a heal. In emulated time a partitioned node does no work until it heals, as a
/// stopped one; in a network lab (`deepcee lab run`) its interface really goes down.
enum class node_action { stop, resume, kill, partition, heal };
std::string_view to_string(node_action a);

struct node_change {
  double at_s = 0;
  std::optional<int> at_step;
  int node = 0;
  node_action action = node_action::stop;
  int64_t line = 0;
  friend bool operator==(const node_change&, const node_change&) = default;
};

/// How fast a device works from `from_s` on: `rate` seconds of nominal work per second
/// (1 / slowdown; 0 while its node is stopped or after it is killed).
struct device_piece {
  double from_s = 0;
  double rate = 1;
  bool killed = false;
};

/// One event of a script as the logs, metrics and trace show it.
struct described_event {
  double at_s = 0;
  std::optional<int> at_step; ///< not resolved yet
  std::string text;           ///< e.g. "link cloud<->edge bandwidth x0.1"
  bool kill = false;
  int64_t line = 0;
};

/// A script of what happens to the cluster during a run: link changes, device slowdowns,
/// node stops, resumes and kills. Empty means the cluster holds for the whole run.
class link_timeline {
public:
  link_timeline() = default;
  /// Sorts each list by time (stable, so file order breaks ties). Throws
  /// std::invalid_argument on a negative time or step, a non-positive bandwidth, scale or
  /// slowdown, a negative latency or a jitter outside [0, 1).
  explicit link_timeline(std::vector<link_change> changes, std::vector<device_change> devices = {},
                         std::vector<node_change> nodes = {});

  const std::vector<link_change>& changes() const { return changes_; }
  const std::vector<device_change>& device_changes() const { return devices_; }
  const std::vector<node_change>& node_changes() const { return nodes_; }
  bool empty() const { return changes_.empty() && devices_.empty() && nodes_.empty(); }
  friend bool operator==(const link_timeline&, const link_timeline&) = default;
  /// Whether some event waits for a step's start time (resolve_steps).
  bool has_step_events() const;

  /// The script with every event of a step below `step_starts.size()` placed at that
  /// step's start and every later step's event left out: what is known once those steps
  /// have started. Time events are kept as they are.
  link_timeline resolve_steps(const std::vector<double>& step_starts) const;

  /// Every event, in time order (unresolved step events last), named as the cluster names
  /// its regions, nodes and devices.
  std::vector<described_event> describe(const cluster& c) const;

  /// One piece of a directed device pair's history: `params` from `from_s` on, with the
  /// jitter in force and the seed of this pair's draws.
  struct piece {
    double from_s = 0;
    link_params params;
    double jitter = 0;
    uint64_t seed = 0;
  };
  /// The history of the link from device x to device y: the cluster's link at time 0
  /// followed by one piece per resolved change that touches the pair.
  std::vector<piece> history(const cluster& c, int x, int y) const;
  /// The device's working rate over time (slowdowns and its node's stops), from 1 at 0.
  std::vector<device_piece> device_history(const cluster& c, int device) const;

private:
  std::vector<link_change> changes_;
  std::vector<device_change> devices_;
  std::vector<node_change> nodes_;
};

/// A running job's script once events are injected into it (`deepcee inject`), split at a
/// step boundary: `due` holds what takes effect now, `pending` the step events of later steps.
struct injection_split {
  link_timeline due;
  link_timeline pending;
};

/// The rule for injected events, taken when step `next_step` (from 0) starts at `start_s`.
/// An event of a step up to `next_step`, or of a time before `start_s`, applies at this
/// boundary (at `start_s`). An event given with neither reads as time 0. A later time stays
/// as it is: due now, effective then. A later step's event waits in `pending` for its own
/// boundary. Throws std::invalid_argument on a negative step or a non-finite start.
injection_split take_injected(const link_timeline& injected, int next_step, double start_s);

/// A job's own script as the run starts: `due` holds its time events (in force from the
/// start, each at its time), `pending` its step events. A run takes those with take_injected
/// at every step boundary, as injected ones, so that a step event happens when the run
/// really starts its step (the coordinator, simulate_adaptive), however fast it goes.
injection_split split_step_events(const link_timeline& script);

/// Throws std::invalid_argument naming the first event (by its line) whose region, node or
/// device index is not one of `c`'s: a script that arrived in a message is checked so
/// before it is used.
void check_fits(const link_timeline& t, const cluster& c);

/// `script` extended by `more`: every event of both, in time order, and at one time the
/// events of `script` before those of `more` (what came later wins, as within one file).
link_timeline merged(const link_timeline& script, const link_timeline& more);

/// Seconds that `bytes` take to cross a link whose history is `pieces`, sent at `start_s`:
/// the latency in force at the start plus the time to drain the bytes while the
/// bandwidth changes (integrated over the pieces). Zero bytes still pay the latency.
double transfer_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                         double bytes);
/// Only the draining part (no latency): how long the bytes occupy the link. Under a jitter
/// the bandwidth of the whole transfer is the piece's times a factor in [1 - j, 1 + j]
/// drawn from (the pair's seed, start_s): the same transfer always draws the same factor.
double drain_duration(const std::vector<link_timeline::piece>& pieces, double start_s,
                      double bytes);
/// The parameters in force at `t_s`.
link_params params_at(const std::vector<link_timeline::piece>& pieces, double t_s);

/// Seconds that `work_s` seconds of nominal compute take on a device whose history is
/// `pieces`, started at `start_s` (integrated over slowdowns and stops). Infinite when the
/// device stops and never resumes, or is killed, before the work is done.
double work_duration(const std::vector<device_piece>& pieces, double start_s, double work_s);
/// "node NAME was killed at T s: the job stops" (or "stopped for good"): why work on a
/// device of node `node` whose history is `pieces` never ends.
std::string stopped_message(const std::vector<device_piece>& pieces, const std::string& node);

} // namespace deepcee::runtime
