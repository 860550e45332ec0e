#pragma once

#include "runtime/adapt/drift_tracker.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/schedule/schedule.hpp"
#include "runtime/sim/simulator.hpp"

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace deepcee::runtime {

/// One transfer as the runtime records it (messages' link_sample): `bytes` from device
/// `from` to device `to`; the link took it at `start_s` (after the FIFO wait), its last
/// byte left at `drained_s`, it arrived at `arrival_s`. So the bandwidth it saw is
/// bytes / (drained - start), free of queueing, and the latency arrival - drained.
/// The simulator records its transfers the same way (sim_options::record_transfers).
using link_observation = transfer_record;

struct link_estimate {
  int from = 0;
  int to = 0;
  link_params assumed;   ///< what the plan assumed: cluster::link_between
  link_params estimated; ///< the medians (the assumed value of a field with no tracker)
  bool drifted = false;  ///< either field
  long samples = 0;
};

struct device_estimate {
  int device = 0;
  /// measured op time / the profile's, median (over the device's calibrated reference, where
  /// calibrate_devices is on)
  double slowdown = 1;
  bool drifted = false;
  long samples = 0;
};

/// The adapter's view of the environment. Links are directed device pairs, the unit the
/// cluster's link figures and the timeline's changes are given in (a WAN pipe that several
/// pairs share shows up on each of them). Devices are compared with the profile's op times
/// for their share of the current plan.
class environment_monitor {
public:
  /// `profile` must outlive the monitor.
  environment_monitor(cluster c, const profile_table& profile, const plan& p, drift_band band = {},
                      size_t window = 9);

  void observe(const link_observation& o);
  /// One op of `kind` on `device` took `seconds` (the device's own share's time).
  void observe_op(int device, op_kind kind, double seconds);
  /// The device computed `seconds` in one step (every F, B and W of its micro-batches).
  void observe_step_compute(int device, double seconds);
  /// A stage on `devices` computed `seconds` in one step. The runtime times a stage's ops,
  /// not each device's share, and an op lasts as long as its slowest share: so this is an
  /// observation of the device whose share the plan expects to take longest.
  void observe_stage_compute(const std::vector<int>& devices, double seconds);
  /// An active probe timed `device` at `slowdown` times its profile's op time (active_probe).
  void observe_slowdown(int device, double slowdown);

  /// A new plan moves the devices' shares: their expected op times follow it. Link
  /// trackers stay (the network did not change). With calibrated devices (wall time), a
  /// device whose share changed measures its new level over the calibration's steps before
  /// its op times count again, and is read at the level its tracker had: a re-plan does not
  /// change a device, and real op times scale with a share only roughly as the profile's
  /// do (an op of a small model is mostly fixed costs).
  void rebase(const plan& p);

  /// Compares each device's op times with its own first steps instead of the profile: the
  /// median ratio of `samples` steps, after `skip` warm-up steps, becomes its reference,
  /// and `band` its drift band. Wall time needs it, since the profile describes the
  /// cluster's devices and the host that runs them may be another (a lab, or a profile from
  /// other hardware): a device then drifts when it changes, not because the profile was
  /// off. Real op times also carry the host's load, hence a wider band than the links'.
  /// Probes' slowdowns are read against the same reference.
  void calibrate_devices(drift_band band, int skip = 3, int samples = 5);

  /// The devices whose compute `p`'s steps measure: per stage the one whose share is
  /// expected to take longest (observe_stage_compute). A drifted device outside this set
  /// is seen by nothing but probes.
  std::set<int> measured_devices(const plan& p) const;
  /// A lower bound on when the first transfer of a step of `p` can start after the step
  /// does. Every transfer follows an op, and no stage's F is shorter than its expected one,
  /// since a slower device only delays it. This is the slack a probe at the boundary has.
  double earliest_send_s(const plan& p) const;

  /// Whether some link or device entered or left drift since the last acknowledge().
  bool changed() const { return changed_; }
  void acknowledge() { changed_ = false; }

  std::vector<link_estimate> links() const;
  std::vector<device_estimate> devices() const;
  /// Devices on drifted links or drifted themselves, ascending.
  std::vector<int> affected_devices() const;
  /// The cluster with every drifted estimate in force: a directed device-pair override per
  /// drifted link, and a drifted device's slowdown (device::slowdown: its op times, measured
  /// or estimated, launches included, stretched as the virtual clock stretches them). Links
  /// and devices within their bands keep the cluster's figures, so noise changes nothing.
  ///
  /// A WAN path (a directed region pair) on which every measured pair has drifted the same
  /// way is taken to have drifted as a whole. Each pair across it that no transfer has
  /// measured gets the measured pairs' median ratio too (inferred_links). Why: the plan
  /// crosses a WAN on few of its pairs. Without this, the policy would answer a region's drop
  /// with a plan that moves onto the pairs not measured yet. It would need a second decision
  /// once they turn out as slow.
  cluster estimated_cluster() const;
  /// The overrides estimated_cluster adds for pairs that no transfer measured.
  std::vector<link_override> inferred_links() const;
  const cluster& assumed_cluster() const { return cluster_; }

private:
  struct link_trackers {
    std::optional<drift_tracker> bandwidth;
    std::optional<drift_tracker> latency;
  };
  struct expected_ops {
    double f = 0, b = 0, w = 0;
    int micro_batches = 0;
  };
  link_trackers& trackers_of(int from, int to);
  /// Each device's expected op times under `p` (its share, recompute and codecs included).
  std::map<int, expected_ops> expected_of(const plan& p) const;
  static int critical_device(const std::map<int, expected_ops>& expected,
                             const std::vector<int>& devices);
  /// Adds `ratio` (measured / the profile's) to `device`'s tracker, or to its calibration
  /// while that lasts; whether the drift state changed.
  bool add_device_ratio(int device, double ratio);

  cluster cluster_;
  const profile_table* profile_;
  drift_band band_;
  size_t window_;
  std::map<std::pair<int, int>, link_trackers> links_;
  std::map<int, drift_tracker> devices_;
  struct calibration {
    drift_band band;
    int skip = 0;
    int samples = 0;
    std::map<int, std::vector<double>> seen; ///< by device, until its tracker exists
  };
  std::optional<calibration> calibration_;
  /// A calibrated device's level after a re-plan changed its share: the ratios seen until
  /// it is known, then the factor that reads them at its tracker's level (0 until then).
  struct rescale {
    std::vector<double> seen;
    double factor = 0;
  };
  std::map<int, rescale> rescales_;
  /// Adds a ratio of a device with a rescale in progress or done.
  bool add_rescaled(int device, double ratio, rescale& r);
  std::map<int, expected_ops> expected_;
  bool changed_ = false;
};

} // namespace deepcee::runtime
