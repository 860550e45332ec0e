#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/schedule/schedule.hpp"
#include "runtime/sim/simulator.hpp"

#include <map>
#include <memory>
#include <vector>

/// The emulated cluster that the actor runtime's virtual time runs on: the same op costs,
/// transfer parts, schedules, all-reduce and optimizer model as the simulator, taken from
/// the simulator's own world (simulator_world.hpp) so that both can never drift apart.
/// Pure values and functions; the actors carry the times on their messages.
namespace deepcee::runtime {

/// One piece of a stage-to-stage transfer: device `from` sends `bytes` to device `to`,
/// occupying the shared FIFO `resources` on its path (network_path.hpp: node interfaces,
/// WAN paths, a node's internal link, numbered as the simulator numbers them). `link` is
/// its sharing group: transfers whose resources overlap, directly or through others, have
/// the same one, and only the transfers of one group need ordering among themselves.
struct transfer_part {
  int from = 0;
  int to = 0;
  int link = 0;
  double bytes = 0;
  std::vector<link_timeline::piece> history; ///< the device pair's link over time
  /// Empty: the part occupies one resource, numbered `link` (a part built by hand).
  std::vector<int> resources;
};

/// One stage as virtual time sees it: one op lasts as long as its slowest device.
struct virtual_stage {
  double f = 0, b = 0, w = 0;
  std::vector<transfer_part> act_parts;  ///< F activations to the next stage
  std::vector<transfer_part> grad_parts; ///< B gradients to the previous stage

  /// Per device of the stage: its op times and its working rate over time (the script's
  /// slowdowns and node stops, link_timeline::device_history).
  std::vector<double> dev_f, dev_b, dev_w;
  std::vector<std::vector<device_piece>> rates;
  std::vector<std::string> nodes; ///< per device: its node's name, for job_stopped
  std::vector<int> devices;       ///< the cluster's device ids, by place
  /// With several devices: per place j, the hop of the stage's ring all-reduce from device
  /// j to device j + 1 (mod n), as the runtime's rings run (by place), its `bytes` 0 (a
  /// round's chunk sets them): what shaped wall time queues a ring chunk on.
  std::vector<transfer_part> ring_parts;
  /// The exchange of gradient shares with the holders of its layers in other pipelines: per
  /// such stage (by flat index, pipeline by pipeline), the transfer from this stage's first
  /// device to that stage's first device, its `bytes` 0 (a share sets them).
  std::map<int, transfer_part> share_parts;

  /// The step's control messages (simulator.hpp): the link from the coordinator's device
  /// to this stage's first device (empty: one node), and per device the link from the
  /// stage's first device to it (empty on the stage's node: no round trip per op).
  std::vector<link_timeline::piece> control;
  std::vector<std::vector<link_timeline::piece>> apart;
  int coordinator_device = 0;
  std::vector<double> dev_opt; ///< per device: its optimizer step at full rate

  /// One control message's latency between the coordinator and this stage, sent at `t_s`.
  double control_latency(double t_s) const { return message_latency_s(control, t_s); }
  /// When its first op of a step that the coordinator starts at `t0` may begin (the
  /// start crossed the link with the previous step's optimizer order, then its devices ran
  /// the optimizer at their rates: the simulator's world::step_begin). Throws job_stopped
  /// when a device's node is killed or stops for good first.
  double step_begin(double t0) const;

  double op_time(op_kind k) const {
    return k == op_kind::forward ? f : k == op_kind::backward_input ? b : w;
  }
  /// Whether the script touches one of its devices (a slowdown or stop at any time, the
  /// first step's start included).
  bool scripted() const;
  /// How long an op started at `start_s` lasts: its slowest device at its rate, as the
  /// simulator times it; op_time where the script touches none of its devices.
  /// Throws job_stopped when a device's node is killed or stops for good first.
  double op_duration(op_kind k, double start_s) const;
};

/// Wall time: how much longer than the time it was measured to take an op lasts, started
/// at `start_s` and answered at `now_s` (seconds on the script's clock), under the script's
/// slowdowns and node stops. Virtual time stretches ops the same way (op_duration). The
/// devices' nominal work is what the op took for real, less the round trip that answers
/// of devices on other nodes waited when `round_trips_waited` (shaped wall time), since
/// the slowdowns do not stretch a link. 0 where the script touches none of its devices.
/// Throws job_stopped when a device's node is killed or stops for good first.
double held_back_s(const virtual_stage& costs, double start_s, double now_s,
                   bool round_trips_waited);

/// When a transfer sent at `send_s` occupies its link and when it arrives.
struct transfer_times {
  double start_s = 0;   ///< the link took it (FIFO behind earlier transfers)
  double drained_s = 0; ///< its last byte left
  double arrival_s = 0; ///< drained + the latency in force at start
};

/// FIFO resources: a transfer starts when every resource on its path has drained the
/// transfers before it, drains at its path's bottleneck (its history) and keeps all of
/// them busy until then, as the simulator's links do. A sender keeps one for the sharing
/// groups only it uses, and a shared group's pipe actor one for that group (fed in
/// send-time order), so results never depend on which actor's message the host happened
/// to deliver first (see DESIGN: virtual time is deterministic).
class link_fifo {
public:
  transfer_times send(const transfer_part& part, double send_s);

private:
  std::vector<double> free_at_; ///< by resource index
};

class virtual_cluster {
public:
  /// Throws input_error as simulate() does when the plan does not fit the cluster.
  virtual_cluster(const cluster& c, const model_spec& model, const profile_table& profile,
                  const plan& p, const link_timeline& timeline = {},
                  const greedy_options& greedy = {});
  ~virtual_cluster();
  virtual_cluster(const virtual_cluster&) = delete;
  virtual_cluster& operator=(const virtual_cluster&) = delete;

  /// The same emulated cluster (devices, links, timeline, profile) running `p`, a plan
  /// over the same cluster: what the runtime switches to when the adapter changes the
  /// allocation. Throws as the constructor does.
  std::unique_ptr<virtual_cluster> with_plan(const plan& p) const;
  /// The same emulated cluster running `p` under `timeline` instead of its own script: what
  /// a running job switches to when events are injected (`deepcee inject`). Throws as the
  /// constructor does.
  std::unique_ptr<virtual_cluster> with_plan(const plan& p, const link_timeline& timeline) const;
  /// The script it follows: time events (a step event is put in force as its step starts).
  const link_timeline& timeline() const;
  /// What it was built from: the adapter's monitor and policy start from these.
  const cluster& hardware() const;
  const model_spec& model() const;
  const profile_table& profile() const;

  /// The op lists the simulator runs (greedy ones over the same stage costs).
  const pipeline_schedule& schedule(int pipeline) const;
  const virtual_stage& stage(int pipeline, int stage) const;

  /// All-reduce buckets and the stages' reports of a step whose stages ended their last op
  /// at `stage_end[pipeline][stage]`: the simulator's finish_step. Returns the step's end.
  /// With `trace`, appends each device's all-reduce buckets to it as
  /// the simulator's trace has them (track = device id).
  double finish_step(const std::vector<std::vector<double>>& stage_end,
                     std::vector<trace_event>* trace = nullptr);
  /// The optimizer steps that begin a step the coordinator starts at `t0`, as the
  /// simulator's trace has them (track = device id), appended to `trace`.
  void begin_step(double t0, std::vector<trace_event>& trace) const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepcee::runtime
