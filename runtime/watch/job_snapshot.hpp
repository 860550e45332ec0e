#pragma once

#include "runtime/watch/run_history.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/// What `deepcee inspect` shows of a running job, as plain values: the job publishes one
/// after every step (tools/snapshot_board.hpp), the inspection endpoint serves it as JSON
/// (runtime/io/job_snapshot_json.hpp), the inspector renders it (inspect_view.hpp).
namespace deepcee::runtime {

/// One op of a stage's last step: kind "F", "B" or "W" on micro-batch `micro`.
struct timeline_op {
  std::string kind;
  int micro = 0;
  double start_s = 0; ///< on the job's clock (virtual, or real in wall time)
  double end_s = 0;
};

struct stage_status {
  int pipeline = 0;
  int stage = 0;
  std::vector<std::string> devices;
  int first_layer = 0; ///< [first_layer, last_layer) of the pipeline layers
  int last_layer = 0;
  std::vector<timeline_op> ops; ///< of the last step, in start order
  double bubble = 0;            ///< idle share of the step's compute window, 0..1
};

struct device_status {
  std::string name;
  std::string kind;
  int pipeline = -1; ///< -1: the plan leaves it out
  int stage = -1;
  double utilization = 0;       ///< busy in F, B and W over the last step, 0..1
  double memory_used_bytes = 0; ///< the simulator's peak estimate for its share
  double memory_capacity_bytes = 0;
};

/// A directed link the plan in force sends on, named by its endpoints ("cloud0/1 ->
/// edge0/0"), as the adapter's monitor estimates it.
struct link_status {
  std::string name;
  double bandwidth_Bps = 0; ///< the monitor's estimate (the plan's before any sample)
  double latency_s = 0;
  double plan_bandwidth_Bps = 0; ///< the cluster file's, which the plan was made for
  double plan_latency_s = 0;
  int64_t samples = 0; ///< the monitor's, behind the estimates
  bool drifted = false;
  double bytes_sent = 0;
  int64_t transfers = 0;
};

struct device_share {
  std::string device;
  int samples = 0; ///< of each micro-batch
};

struct link_compression {
  std::string link;
  std::string compression;
};

struct allocation_status {
  std::vector<int> micro_batches; ///< per pipeline
  std::vector<device_share> samples;
  std::vector<link_compression> compression; ///< per link between neighbouring stages
};

struct adapter_decision {
  int step = 0;
  std::string kind;
  std::string reason;
  double predicted_gain = 0; ///< relative, 0.1 = 10% more samples/s
};

/// An injected event or fault: at a step, or at a time on the job's clock.
struct job_event {
  int step = 0;
  double time_s = 0;
  std::string text;
};

struct job_snapshot {
  uint64_t version = 0; ///< the board's, 1 for the first step published
  std::string job;
  std::string model;
  std::string cluster;
  std::string strategy;
  std::string time_mode;           ///< "virtual", "wall" or "dry"
  std::vector<std::string> groups; ///< the device groups, one line each
  int step = 0;
  int steps = 0;                  ///< the run's total
  std::optional<double> loss;     ///< none in dry mode
  std::optional<double> val_loss; ///< the last validation, at val_step
  int val_step = 0;
  std::vector<double> loss_history; ///< the recent steps' losses, oldest first
  double clock_s = 0;               ///< the last step's end on the job's clock
  std::optional<double> real_samples_per_s;
  std::optional<double> emulated_samples_per_s; ///< none in wall time
  std::vector<stage_status> stages;
  std::vector<device_status> devices;
  std::vector<link_status> links;
  allocation_status allocation;
  std::vector<adapter_decision> decisions; ///< the recent ones
  std::vector<job_event> events;           ///< the recent ones
  /// Every decision and event so far (the lists above keep only the recent ones).
  std::map<std::string, int64_t> decisions_by_kind;
  int64_t events_total = 0;
  int64_t dropped_messages = 0; ///< malformed messages the stages dropped
  int64_t dropped_frames = 0;   ///< frames the endpoint dropped for slow clients
  /// The whole run so far, for a chart opened late: served on its own (/api/history), never
  /// inside the snapshot's JSON. Shared, since every snapshot of a step holds the same.
  std::shared_ptr<const run_history> history;
};

/// The idle share of a stage's window [from_s, to_s] that its ops leave (ops of one stage
/// run one at a time): 0 when the window is empty.
double bubble_share(const std::vector<timeline_op>& ops, double from_s, double to_s);

/// Busy time of `ops` (their durations summed).
double busy_seconds(const std::vector<timeline_op>& ops);

/// Appends `entry` to `history`, keeping the last `keep` entries.
template <class T>
void push_history(std::vector<T>& history, std::type_identity_t<T> entry, size_t keep) {
  history.push_back(std::move(entry));
  if (history.size() > keep)
    history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(keep));
}

} // namespace deepcee::runtime
