#pragma once

#include "messages/codec.hpp"
#include "messages/types.hpp"
#include "runtime/base/train_config.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/plan/node_layout.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "runtime/step/link_sharing.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace deepcee::actors {

/// How a job's actors keep time (DESIGN: Time). `shape_links` (wall mode only) makes every
/// transfer between devices (stage-to-stage tensors, all-reduce ring chunks, gradient
/// shares) take as long as the cluster's link model says: the receiver holds it until its
/// modelled arrival when both ends read one steady clock (one process, or processes of one
/// boot of one host: runtime/step/shaped_delivery.hpp), else the sender waits for it.
struct run_mode {
  runtime::time_mode time = runtime::time_mode::virtual_time;
  bool shape_links = false;
  /// Whether the adapter's policy answers drift (job file `adapt`); off, the plan stays as it
  /// is (a static run) while the adapter still keeps its estimates.
  bool adapt = true;
  /// How long a lost node goes unnoticed (the heartbeat's timeout, job file
  /// `heartbeat_timeout`): virtual and dry time charge it to a recovery.
  double liveness_s = 3;
  /// Every how many steps the stages of a plan that holds some layer on one node only
  /// snapshot to a peer (job file `[recovery] snapshot_every`): -1 from the snapshot's
  /// send and the step time (runtime/adapt/snapshot_plan.hpp), 0 never.
  int snapshot_every = -1;
};

/// Counted on the tensor send and receive paths of every stage of this process, so that a
/// benchmark can show what one activation costs. A serialization writes a payload into a
/// message, a deserialization reads it out (into a device, or widened to fp32); any other
/// pass over a payload (a staging buffer, an aligned copy of received bytes) is a copy.
struct tensor_path_counts {
  std::atomic<int64_t> messages{0};
  std::atomic<int64_t> serializations{0};
  std::atomic<int64_t> deserializations{0};
  std::atomic<int64_t> payload_copies{0};
};

/// Shaped wall time's links: one FIFO per network resource (network_path.hpp: a node's
/// interface each way, a WAN path, a node's internal link) for every transfer this process
/// sends, activations, gradients and all-reduce ring chunks alike, so that two stages
/// sending on one link (a WAN crossed by two pipelines) or a stage and a device's ring
/// share its bandwidth. Senders on other nodes keep their own: they cannot see each other's
/// sends.
class shaped_links {
public:
  runtime::transfer_times send(const runtime::transfer_part& part, double send_s) {
    std::lock_guard lock(mutex_);
    return fifo_.send(part, send_s);
  }

private:
  std::mutex mutex_;
  runtime::link_fifo fifo_;
};

/// What the actors of one job context write (`counts`, `shaped`) belongs to that context: a
/// copy of the context (a re-plan's) starts with its own, fresh. So copying a context copies
/// every setting, and a field added later is never left out of a copy.
template <class T>
struct fresh_on_copy : T {
  fresh_on_copy() = default;
  fresh_on_copy(const fresh_on_copy&) : T() {}
  fresh_on_copy& operator=(const fresh_on_copy&) { return *this; }
};

/// A wait of `seconds` (none when not positive) as a timer of delayed_send takes it.
inline std::chrono::microseconds wait_of(double seconds) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(std::max(0.0, seconds)));
}

/// What every actor of a job in this process reads and never writes (`counts` apart): the
/// plan, the training settings, the corpus, the emulated cluster and the time mode. Shared
/// by pointer because it is immutable after start; a node of a multi-process job builds its own
/// from the deployment message.
struct job_context {
  runtime::plan plan;
  runtime::train_config train;
  std::shared_ptr<const runtime::text_corpus> corpus;
  std::shared_ptr<runtime::virtual_cluster> cluster; ///< op and link times, schedules
  /// The job's script as given. `cluster` follows its time events; the coordinator puts its
  /// step events in force at the real starts of their steps (coordinator.hpp).
  runtime::link_timeline script;
  run_mode mode;
  /// Per cluster device: its place among its node's devices, which picks its GPU when the
  /// job runs on real ones ([train] device = "cuda"; device_backend).
  std::vector<int> local_index;
  /// The most values of one ring chunk of a stage's all-reduce: what one message between
  /// nodes carries (the same in every layout, so every layout sums alike; tests lower it).
  size_t ring_chunk_values = messages::max_payload_floats;
  mutable fresh_on_copy<tensor_path_counts> counts; ///< what actors write: statistics,
  mutable fresh_on_copy<shaped_links> shaped;       ///< and shaped wall time's link FIFOs
  /// Wall mode's zero: real times are seconds since this process set up the job.
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  /// How far `epoch` may lie from the coordinator's node's (s): 0 there and on its host,
  /// else half the round trip that set it (node_member's accept_job).
  double clock_error_s = 0;
  /// This host's boot id (runtime::read_boot_id, read by main; "" unknown): the processes of
  /// a job whose boot ids are equal share the steady clock (stage_wiring::boot_ids).
  std::string boot_id;

  bool wall() const { return mode.time == runtime::time_mode::wall; }
  bool dry() const { return mode.time == runtime::time_mode::dry; }
  /// Shaped wall time: transfers and control messages take the link model's time.
  bool shaping() const { return wall() && mode.shape_links; }
  /// The links that need a pipe actor: those several stages send on, in virtual and dry
  /// time. Wall time is real (transfers take what they take, or what shaping says on the
  /// sender's side: `shaped`), so no pipe runs there.
  std::vector<runtime::shared_link> piped_links() const {
    return wall() ? std::vector<runtime::shared_link>{} : runtime::shared_links(*cluster, plan);
  }
  /// Real seconds since `epoch` (wall mode's clock).
  double real_now_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch).count();
  }
  /// The steady clock now and at wall time `real_s`, in ns since the clock's own zero: what
  /// processes of one boot of one host read alike (shaped messages' deliver_at_ns).
  static int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// Wall time (seconds since `epoch`) of `steady_ns`, a steady clock reading in ns.
  double real_s_at(int64_t steady_ns) const {
    const auto epoch_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(epoch.time_since_epoch()).count();
    return static_cast<double>(steady_ns - epoch_ns) * 1e-9;
  }
  int64_t steady_ns_at(double real_s) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               (epoch + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(real_s)))
                   .time_since_epoch())
        .count();
  }

  /// The plan with the allocation of `r` in force (its empty fields: the plan's); throws
  /// std::invalid_argument when it does not fit the plan (runtime::with_allocation).
  runtime::plan plan_after(const messages::rebalance& r) const {
    auto a = runtime::allocation_of(plan);
    a.micro_batches = r.micro_batches;
    if (!r.samples.empty())
      a.samples = r.samples;
    if (!r.compressions.empty())
      a.compressions = r.compressions;
    return runtime::with_allocation(plan, a);
  }

  int stage_count(int pipeline) const {
    return static_cast<int>(plan.pipelines.at(static_cast<size_t>(pipeline)).stages.size());
  }
  /// Stages of all pipelines numbered pipeline by pipeline (stage_wiring's order).
  int flat_index(int pipeline, int stage) const {
    int n = 0;
    for (int q = 0; q < pipeline; ++q)
      n += stage_count(q);
    return n + stage;
  }
  /// Which node runs each stage and device (a multi-process job; empty in one, which runs
  /// them all), and each stage's node by name.
  runtime::node_layout layout;
  std::vector<std::string> node_names; ///< the cluster's, by index
  std::vector<std::string> stage_nodes;
  /// Lays the job out on the nodes of `c`: from then on it is one node's part of a
  /// multi-process job.
  void place_on_nodes(const runtime::cluster& c) {
    layout = runtime::layout_of(c, plan);
    node_names.clear();
    for (const auto& n : c.nodes)
      node_names.push_back(n.name);
    stage_nodes.clear();
    for (int node : layout.stage_node)
      stage_nodes.push_back(node_names.at(static_cast<size_t>(node)));
  }

  /// The name of the node that runs device slot `slot` (a multi-process job).
  const std::string& slot_node_name(int slot) const {
    return node_names.at(static_cast<size_t>(layout.slot_node.at(static_cast<size_t>(slot))));
  }

  /// The (pipeline, stage) of flat index `flat` (the inverse of flat_index).
  std::pair<int, int> stage_at(size_t flat) const {
    int p = 0, s = static_cast<int>(flat);
    while (s >= stage_count(p))
      s -= stage_count(p++);
    return {p, s};
  }
  /// "pipeline p stage s" of flat index `flat`, with " (node n)" in a multi-process job, for
  /// messages.
  std::string stage_name(size_t flat) const {
    const auto [p, s] = stage_at(flat);
    auto name = "pipeline " + std::to_string(p) + " stage " + std::to_string(s);
    if (flat < stage_nodes.size())
      name += " (node " + stage_nodes[flat] + ")";
    return name;
  }
};

} // namespace deepcee::actors
