#pragma once

#include "runtime/cluster/network_path.hpp"
#include "runtime/sim/simulator.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

/// Internal to the simulator (simulator*.cpp): the plan laid out for fast stepping. Built
/// once per simulate() call; every per-event quantity (op times, transfer parts, the link
/// each part crosses) is precomputed here so that the event loop allocates nothing.
namespace deepcee::runtime::sim_detail {

/// One piece of a stage-to-stage transfer: device `from` sends `bytes` to device `to`.
struct part {
  int from = 0;
  int to = 0;
  int route = 0; ///< index into world::links: where its bytes are counted and traced
  int link = 0;  ///< its sharing group (world::groups): the unit the runtime orders
  int pair = 0;  ///< index into world::histories
  double bytes = 0;
  std::vector<int> res; ///< indices into world::resources: every one it occupies
};

struct stage_rt {
  int pipeline = 0;
  int stage = 0;
  int first_layer = 0;
  int last_layer = 0;
  std::vector<int> devices;
  std::vector<int> samples;
  std::vector<double> dev_f, dev_b, dev_w; ///< per device of the stage
  std::vector<double> act_b, act_w;        ///< per device: activation bytes per micro-batch
  std::vector<double> rebuilt;             ///< per device: recomputed activations held while B runs
  double f = 0, b = 0, w = 0;              ///< slowest device
  double state = 0;             ///< weights, gradients, AdamW moments of the stage's layers
  std::vector<part> act_parts;  ///< F activations to the next stage
  std::vector<part> grad_parts; ///< B gradients to the previous stage
  int schedule = 0;             ///< index into world::schedules
  int prev = -1, next = -1;     ///< global stage indices in the same pipeline
  /// The step's control messages (simulator.hpp, "control messages"): the pair from the
  /// coordinator's device to this stage's first device, -1 where both run on one node.
  int control_pair = -1;
  /// Per device: the pair from the stage's first device to it where it runs on another
  /// node (each op's work goes there and its answer comes back), -1 on the stage's node.
  std::vector<int> apart_pairs;
  std::vector<double> dev_opt; ///< per device: its optimizer step over the stage's layers
};

/// A route's statistics (a directed device pair inside a region, a region pair's WAN path
/// across regions): what sim_result::links reports and the trace draws.
struct link_rt {
  link_kind kind = link_kind::device_pair;
  int from = 0;
  int to = 0;
  double bytes = 0;
  double busy = 0;
};

/// A shared FIFO resource of the network (network_path.hpp) and when it is next free.
struct resource_rt {
  net_resource what;
  double free_at = 0;
};

/// One ring of an all-reduce phase over `devs`, with what its hops occupy.
struct ring_rt {
  std::vector<int> devs;
  std::vector<int> pairs;  ///< per hop (devs[i] -> devs[i + 1]): world::histories
  std::vector<int> routes; ///< per hop: world::links
  std::vector<int> res;    ///< every resource any hop occupies, once
  double crossings = 1;    ///< the most hops that cross one resource
};

/// Consecutive layers whose gradients are reduced over the same devices.
struct bucket {
  int first_layer = 0;
  int last_layer = 0;
  double bytes = 0;
  std::vector<int> stages;               ///< global stage indices holding the layers
  std::vector<std::vector<int>> regions; ///< holders grouped by region, leader first
  std::vector<int> holders;              ///< all of them, region by region
  std::vector<ring_rt> region_rings;     ///< per region (the whole ring with one region)
  ring_rt leaders;                       ///< the regions' leaders, with several regions
};

struct world {
  const cluster* c = nullptr;
  const model_spec* model = nullptr;
  const link_timeline* timeline = nullptr;
  std::vector<stage_rt> stages;
  std::vector<pipeline_schedule> schedules; ///< one per pipeline
  std::vector<int> micro_batches;           ///< per pipeline
  std::vector<link_rt> links;
  std::unordered_map<uint64_t, int> link_index;
  std::vector<std::vector<link_timeline::piece>> histories; ///< per directed device pair
  std::unordered_map<uint64_t, int> pair_index;
  std::vector<std::vector<device_piece>> device_rates; ///< per device of the cluster
  std::vector<resource_rt> resources;
  std::map<net_resource, int> resource_index;
  std::vector<bucket> buckets;
  std::vector<double> scratch; ///< per-device buffer reused across steps
  std::vector<double> ar_free; ///< per resource: when the all-reduce may use it, per step

  /// The directed device pair's history, computed once: the cluster's link and the
  /// timeline, drained no faster than the two nodes' interfaces allow (nic_cap_between).
  int pair_of(int x, int y);
  /// Recomputes every pair's history and device's rates from `t` (kept by pointer): a
  /// script whose step events became known as the run went on.
  void set_timeline(const link_timeline& t);
  /// The name of `device`'s node, for job_stopped.
  const std::string& node_name(int device) const;
  /// How long `work_s` of nominal compute on `device` started at `start_s` takes.
  /// Throws job_stopped when the device's node is killed, or stops for good, first.
  double work_time(int device, double start_s, double work_s) const;
  /// One control message's latency between the coordinator and stage `st` at `t_s` (0 on
  /// one node).
  double control_latency(const stage_rt& st, double t_s) const;
  /// When stage `st`'s first op of a step that the coordinator starts at `t0` may begin:
  /// the start (sent with the previous step's optimizer order) crossed the link and the
  /// devices ran that optimizer step.
  double step_begin(const stage_rt& st, double t0) const;
  /// How long device `d` (by place) of `st` takes for its optimizer step begun at `t_s`,
  /// at its rate then (a stopped node's waits for the resume). Throws job_stopped as
  /// work_time does.
  double optimizer_time(const stage_rt& st, size_t d, double t_s) const;
  /// The work-and-answer round trip of device `d` (by place) of `st` for an op at `t_s`.
  double apart_round_trip(const stage_rt& st, size_t d, double t_s) const;
  /// The route a transfer from x to y is counted on: the device pair inside a region, the
  /// region pair's WAN path across regions.
  int link_of(int x, int y);
  /// The resources a transfer from x to y occupies (path_between), as world indices.
  std::vector<int> resources_of(int x, int y);
};

/// The directed pair's history under `t`, drained no faster than the two nodes'
/// interfaces allow (nic_cap_between).
std::vector<link_timeline::piece> capped_history(const cluster& c, const link_timeline& t, int x,
                                                 int y);

/// Lays out stages, their op costs (profile at each device's share), schedules and
/// transfer parts.
world build_world(const cluster& c, const model_spec& model, const profile_table& profile,
                  const plan& p, const link_timeline& timeline, const greedy_options& greedy);

/// All-reduce buckets after the compute of a step whose stages ended at `stage_end`, then
/// each stage's report to the coordinator; adds each device's all-reduce time; returns the
/// step's end (the last report in: the coordinator sends the optimizer's order then).
double finish_step(world& w, const sim_options& options, sim_result& r,
                   const std::vector<double>& stage_end, std::vector<double>& device_ar);

/// The optimizer steps that begin a step started at `t0` (the previous step's gradients,
/// simulator.hpp): adds each device's time, and traces them with options.trace.
void begin_step(const world& w, const sim_options& options, sim_result& r, double t0,
                std::vector<double>& device_opt);

/// Fills the result's statistics after all steps (`total_s` simulated from `t0`).
void fill_stats(world& w, const plan& p, const profile_table& profile, sim_result& r,
                const std::vector<double>& busy, const std::vector<double>& ar,
                const std::vector<double>& opt, const std::vector<double>& first_stage_end,
                double t0, double total_s);

/// Per-stage costs of pipeline `index` of a built world (comm at time `at_s`).
std::vector<stage_cost> stage_costs_of(world& w, int index, double at_s);

} // namespace deepcee::runtime::sim_detail
