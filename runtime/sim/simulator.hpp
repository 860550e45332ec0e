#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/schedule/schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

/// Discrete-event simulation of training steps of a plan on a cluster. The model, and
/// where it simplifies (each choice is deliberate; see simulator.cpp for the why):
///
/// - Compute. A stage runs its schedule's op list in order. An op runs on all the stage's
///   devices at once, each on its share of the samples (the profile's cost at that sample
///   count, summed over the stage's layers). The stage moves in lockstep: the op ends when
///   the slowest device ends, and the next op starts no earlier. A device's busy time is its
///   own share's time, so faster devices show idle time (bubble) inside a stage.
/// - Pipeline transfers. When F(i) ends on stage s, each device of s sends the part of its
///   samples that each device of s+1 holds. Samples are numbered 0..b-1, and device k of a
///   stage holds those after devices 0..k-1's, so the pair (u, v) carries the overlap of
///   their ranges. The bytes are model_spec::transfer_bytes(overlap, stage s's
///   send_compression). B's gradients go back the same way, with the same encoding. A
///   fused backward (GPipe, 1F1B) sends the gradient when W ends. The receiving stage's op
///   waits for every part of every device.
/// - Network. A transfer occupies every shared FIFO resource on its path
///   (runtime/cluster/network_path.hpp). Between two nodes: the sending node's interface
///   (out), the directed region pair's WAN path when the regions differ, and the receiving
///   node's interface (in). Inside a node: the node's link between the two devices. It
///   starts when all of them are free and keeps them until it has drained its bytes. It
///   drains at the device pair's bandwidth (cluster::link_between, then the timeline,
///   capped by the nodes' `nic`), integrated over the timeline's changes. It arrives after
///   the latency in force when it started. So N pipelines crossing one interface take N
///   times as long as one, and the step does not depend on how regions label nodes with the
///   same link figures. Each interface direction is its own FIFO (full duplex). Statistics
///   and trace tracks (sim_result::links) stay per route: the directed device pair inside a
///   region, the region pair's WAN path across regions.
/// - All-reduce. Each layer's gradients are reduced over every device holding the layer.
///   Consecutive layers with the same holders form one bucket. A bucket starts when all its
///   holders ended their last W and their previous buckets.
///   - One region: a ring, 2(n-1)/n * bytes / B_min + 2(n-1) * alpha_max over its links.
///   - Several regions: in each region a reduce to a leader and at the end a broadcast,
///     each 2(n_r-1)/n_r * bytes / B_min + n_r * alpha_max (reduce-scatter then gather;
///     scatter then all-gather). Between them, a ring over the region leaders.
///   Each phase occupies the resources its hops cross, like a transfer (a resource that k
///   hops cross gives each 1/k of the bandwidth). It waits for earlier buckets' phases on
///   them, and for the step's pipeline transfers. Those are taken as done on a resource
///   once every stage that receives over it has ended its step.
/// - Control messages. The coordinator runs on the node of pipeline 0's first stage's
///   first device, each stage on its first device's node. A step costs the messages the
///   runtime really sends, each one latency of the link between the two nodes (none on one
///   node). A stage reports to the coordinator once its gradients are reduced. The step
///   ends when the last report is in. The coordinator then sends each stage the optimizer's
///   order and the next step's start together. A device on another node than its stage
///   gets each op's work and answers over its link. So an op of such a stage ends when its
///   last device's answer is in: each device's time plus its round trip (apart_answer_s).
/// - Optimizer. Per device, the step of its stage's layers as the profile measured it (the
///   gradients' squares, AdamW, zeroing the gradients; profile_table::optimizer_s). Without
///   a measure: AdamW's memory traffic (read weights, gradients and both moments, write
///   weights and moments) at the device's memory bandwidth. It runs once the order has
///   arrived and begins the next step, before the stage's first op. So every step, the
///   first one too, is charged one optimizer step. A run of n steps takes what n steps of
///   the runtime and the last optimizer step take.
/// - Memory per device: weights, gradients and AdamW moments of its layers, plus
///   activations in fp32. act_until_b is added when F runs, swapped for act_until_w when B
///   runs, released when W runs (at its sample count). Out of memory when the peak exceeds
///   the device's memory.
/// - Steps. Several steps run back to back with a barrier between them: the next step
///   starts when the coordinator has every report. So a timeline change can hit any step.
namespace deepcee::runtime {

/// The script killed a node the plan uses, or stopped it for good: the job cannot go on
/// (there is no recovery yet). what() is the one line the CLI prints.
class job_stopped : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One control message's latency over `link` (a device pair's history) sent at `t_s`; an
/// empty history: both ends on one node, 0.
double message_latency_s(const std::vector<link_timeline::piece>& link, double t_s);

/// When the answer to an op's work arrives. The work was sent at `sent_s` over `link` to a
/// device on another node than its stage. It crosses the link, the device computes for
/// `compute_s`, the answer crosses back (one latency each way, at the send). Shaped wall
/// time holds a real answer, which came at `answered_s`, until then. `compute_s` is the
/// device's word, believed up to the real round trip it was part of.
double apart_answer_s(const std::vector<link_timeline::piece>& link, double sent_s,
                      double answered_s, double compute_s);

/// When a stage's next step may begin in shaped wall time. Its start arrived at
/// `start_arrival_s` (the coordinator already waited the emulated latency). Its optimizer
/// step began at `order_arrival_s`, since the order comes at once over the real link, and
/// took `optimizer_s`. Over the emulated link it would have begun `latency_s` later.
inline double step_begin_due_s(double start_arrival_s, double order_arrival_s, double latency_s,
                               double optimizer_s) {
  return std::max(start_arrival_s, order_arrival_s + latency_s + optimizer_s);
}

/// The longest work-and-answer round trip of an op of stage `st` of a plan on `c`, at the
/// cluster's link latencies. It is twice the latency between the stage's first device and
/// its farthest device on another node (0 when all are on one node).
double apart_round_trip_s(const cluster& c, const stage_plan& st);

/// A stage's compute in an op that spanned `span_s` and waited `trip_s` for its devices'
/// round trips: what the adapter's monitor reads, in the simulator and the runtime alike.
inline double stage_compute_s(double span_s, double trip_s) {
  return span_s > trip_s ? span_s - trip_s : 0.0;
}

struct sim_options {
  int steps = 1;
  double start_s = 0; ///< time of the first step on the timeline's clock
  bool trace = false; ///< keep every event for write_chrome_trace
  /// Keep every pipeline transfer (sim_result::transfers): what the runtime's pipes and
  /// stages report to the adapter as link samples.
  bool record_transfers = false;
  greedy_options greedy; ///< for pipelines with schedule_kind::greedy
};

/// A track of the trace: a device, a link inside a region (directed device pair) or a WAN
/// pipe (directed region pair).
enum class link_kind { device_pair, region_pair };

struct link_stats {
  link_kind kind = link_kind::device_pair;
  int from = 0; ///< device id, or region index for a WAN pipe
  int to = 0;
  double bytes = 0;       ///< pipeline transfers and all-reduce traffic, all steps
  double busy_s = 0;      ///< time spent draining bytes, all steps
  double utilization = 0; ///< busy_s / simulated time
};

struct device_stats {
  int device = 0;
  int pipeline = 0;
  int stage = 0;
  int samples = 0;        ///< per micro-batch
  double compute_s = 0;   ///< busy in F, B and W, per step (mean over steps)
  double allreduce_s = 0; ///< per step
  double optimizer_s = 0; ///< per step
  double utilization = 0; ///< compute_s / step_time
  double state_bytes = 0; ///< weights, gradients, AdamW moments
  double peak_activation_bytes = 0;
  double peak_bytes = 0;   ///< state + peak activations
  double memory_bytes = 0; ///< the device's capacity
  bool out_of_memory = false;
};

struct stage_stats {
  int pipeline = 0;
  int stage = 0;
  double f_s = 0, b_s = 0, w_s = 0; ///< one op on the stage (slowest device)
  double comm_to_next_s = 0;        ///< slowest activation transfer to the next stage, no queueing
  double bubble_ratio = 0;          ///< mean over its devices of (step - compute) / step
  double compute_end_s = 0;         ///< last op's end, relative to the step's start (first step)
  /// Its ops' durations summed (each as long as its slowest device), per step (mean): what
  /// the runtime times of a stage and the adapter reads (observe_stage_compute).
  double compute_s = 0;
};

/// One pipeline transfer between devices: the link took it at `start_s` (after the FIFO
/// wait), its last byte left at `drained_s`, it arrived at `arrival_s`.
struct transfer_record {
  int from = 0;
  int to = 0;
  double bytes = 0;
  double start_s = 0;
  double drained_s = 0;
  double arrival_s = 0;
};

/// One interval of the trace. track < device count: that device; otherwise link
/// (track - device count) of sim_result::links.
struct trace_event {
  std::string name;
  int track = 0;
  double start_s = 0;
  double end_s = 0;
};

struct sim_result {
  double step_time_s = 0;           ///< mean over steps
  std::vector<double> step_times_s; ///< each step
  int global_batch = 0;
  double samples_per_s = 0;
  double bubble_ratio = 0;      ///< mean of the stages'
  double flops_utilization = 0; ///< model FLOPs per step / (peak FLOP/s of used devices * step)
  double peak_bytes = 0;        ///< largest peak over devices
  bool out_of_memory = false;
  std::vector<std::vector<stage_stats>> stages; ///< [pipeline][stage]
  std::vector<device_stats> devices; ///< devices of the plan, in pipeline and stage order
  std::vector<link_stats> links;     ///< every link that carried bytes
  int device_count = 0;              ///< the cluster's, for trace tracks
  std::vector<trace_event> events;   ///< only with sim_options::trace
  /// In the order they were sent; only with sim_options::record_transfers.
  std::vector<transfer_record> transfers;
};

/// The schedule a pipeline runs: make_schedule for the fixed kinds, make_greedy_schedule
/// over the stage costs for greedy.
pipeline_schedule schedule_of(const pipeline_plan& pipeline, const std::vector<stage_cost>& costs,
                              const greedy_options& options = {});

/// Per-stage costs of pipeline `index` as the simulator sees them, for the planner's greedy
/// schedules and quick estimates. Each holds the slowest device's F, B and W. It holds the
/// slowest activation transfer to the next stage at time 0 (latency + bytes / bandwidth, no
/// queueing). It holds the activation bytes and memory limit of the tightest device.
std::vector<stage_cost> pipeline_stage_costs(const cluster& c, const profile_table& profile,
                                             const plan& p, int index);

/// Throws input_error (source "plan") when the plan does not fit the cluster
/// (validate_plan) or its model differs from the profile's.
sim_result simulate(const cluster& c, const model_spec& model, const profile_table& profile,
                    const plan& p, const link_timeline& timeline = {},
                    const sim_options& options = {});

} // namespace deepcee::runtime
