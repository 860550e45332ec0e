#include "runtime/sim/simulator_world.hpp"

#include "runtime/cluster/codec_cost.hpp"
#include "runtime/sim/device_time.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace deepcee::runtime::sim_detail {

namespace {

bool same_cost(const stage_cost& a, const stage_cost& b) {
  return a.f == b.f && a.b == b.b && a.w == b.w && a.comm_to_next == b.comm_to_next &&
         a.activation_bytes == b.activation_bytes && a.weight_grad_bytes == b.weight_grad_bytes &&
         a.memory_limit == b.memory_limit;
}

bool operator==(const std::vector<stage_cost>& a, const std::vector<stage_cost>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_cost);
}

uint64_t key_of(int x, int y) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(x)) << 32) | static_cast<uint32_t>(y);
}

/// Devices with the same figures and share cost the same: 1024 devices of a handful of
/// kinds need only a handful of profile look-ups per stage.
struct cost_key {
  std::string kind;
  double memory, fp32, bf16, mem_bw;
  int samples, first, last;
  auto tie() const { return std::tie(kind, memory, fp32, bf16, mem_bw, samples, first, last); }
  bool operator<(const cost_key& o) const { return tie() < o.tie(); }
};

struct stage_device_cost {
  double f = 0, b = 0, w = 0, act_b = 0, act_w = 0;
};

} // namespace

std::vector<link_timeline::piece> capped_history(const cluster& c, const link_timeline& t, int x,
                                                 int y) {
  auto out = t.history(c, x, y);
  const double cap = nic_cap_between(c, x, y);
  for (auto& piece : out)
    piece.params.bandwidth_Bps = std::min(piece.params.bandwidth_Bps, cap);
  return out;
}

int world::pair_of(int x, int y) {
  auto [it, fresh] = pair_index.emplace(key_of(x, y), static_cast<int>(histories.size()));
  if (fresh)
    histories.push_back(capped_history(*c, *timeline, x, y));
  return it->second;
}

void world::set_timeline(const link_timeline& t) {
  timeline = &t;
  for (const auto& [key, index] : pair_index)
    histories[static_cast<size_t>(index)] =
        capped_history(*c, t, static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffffu));
  device_rates.clear();
  for (int d = 0; d < static_cast<int>(c->devices.size()); ++d)
    device_rates.push_back(t.device_history(*c, d));
}

const std::string& world::node_name(int device) const {
  return c->nodes[static_cast<size_t>(c->devices[static_cast<size_t>(device)].node)].name;
}

double world::work_time(int device, double start_s, double work_s) const {
  // device::slowdown (an estimated cluster's) stretches the work as a script's slowdown does.
  return work_duration_or_stop(device_rates[static_cast<size_t>(device)], start_s,
                               work_s * c->devices[static_cast<size_t>(device)].slowdown,
                               node_name(device));
}

double world::control_latency(const stage_rt& st, double t_s) const {
  return st.control_pair < 0
             ? 0.0
             : params_at(histories[static_cast<size_t>(st.control_pair)], t_s).latency_s;
}

double world::optimizer_time(const stage_rt& st, size_t d, double t_s) const {
  const int device = st.devices[d];
  return work_duration_or_stop(device_rates[static_cast<size_t>(device)], t_s, st.dev_opt[d],
                               node_name(device));
}

double world::step_begin(const stage_rt& st, double t0) const {
  return step_begin_s(t0, control_latency(st, t0), st.devices.size(),
                      [&](size_t d, double arrived) { return optimizer_time(st, d, arrived); });
}

double world::apart_round_trip(const stage_rt& st, size_t d, double t_s) const {
  const int pair = st.apart_pairs.empty() ? -1 : st.apart_pairs[d];
  return pair < 0 ? 0.0 : 2.0 * params_at(histories[static_cast<size_t>(pair)], t_s).latency_s;
}

std::vector<int> world::resources_of(int x, int y) {
  std::vector<int> out;
  for (const auto& r : path_between(*c, x, y)) {
    auto [it, fresh] = resource_index.emplace(r, static_cast<int>(resources.size()));
    if (fresh)
      resources.push_back({r, 0.0});
    out.push_back(it->second);
  }
  return out;
}

int world::link_of(int x, int y) {
  const auto& dx = c->devices[static_cast<size_t>(x)];
  const auto& dy = c->devices[static_cast<size_t>(y)];
  const bool wan = dx.region != dy.region;
  // Region pairs get keys with the top bit set so they never collide with device pairs.
  const uint64_t key = wan ? (key_of(dx.region, dy.region) | (uint64_t{1} << 63)) : key_of(x, y);
  auto [it, fresh] = link_index.emplace(key, static_cast<int>(links.size()));
  if (fresh) {
    link_rt l;
    l.kind = wan ? link_kind::region_pair : link_kind::device_pair;
    l.from = wan ? dx.region : x;
    l.to = wan ? dy.region : y;
    links.push_back(l);
  }
  return it->second;
}

namespace {

/// Parts of a transfer between two stages: the rows each device pair carries.
void add_parts(world& w, const stage_rt& from, const stage_rt& to, compression comp,
               std::vector<part>& out) {
  for (const auto& rows : rows_between(from.samples, to.samples)) {
    part pt;
    pt.from = from.devices[rows.from];
    pt.to = to.devices[rows.to];
    pt.bytes = static_cast<double>(w.model->transfer_bytes(rows.samples, comp));
    pt.route = w.link_of(pt.from, pt.to);
    pt.pair = w.pair_of(pt.from, pt.to);
    pt.res = w.resources_of(pt.from, pt.to);
    out.push_back(pt);
  }
}

/// Sharing groups: transfers whose resources overlap, directly or through others, are one
/// group, numbered in order of first appearance. Each group's transfers can be timed in
/// send order apart from every other group's, which is what the runtime's pipes do.
void assign_groups(world& w) {
  std::vector<int> parent(w.resources.size());
  for (size_t k = 0; k < parent.size(); ++k)
    parent[k] = static_cast<int>(k);
  const auto find = [&](int x) {
    while (parent[static_cast<size_t>(x)] != x)
      x = parent[static_cast<size_t>(x)] =
          parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  };
  for (auto& st : w.stages)
    for (auto* parts : {&st.act_parts, &st.grad_parts})
      for (const auto& pt : *parts)
        for (size_t k = 1; k < pt.res.size(); ++k)
          parent[static_cast<size_t>(find(pt.res[k]))] = find(pt.res[0]);
  std::vector<int> number(w.resources.size(), -1);
  int groups = 0;
  // A transfer with no resource (a device to itself) is a group of its own.
  for (auto& st : w.stages)
    for (auto* parts : {&st.act_parts, &st.grad_parts})
      for (auto& pt : *parts) {
        if (pt.res.empty()) {
          pt.link = groups++;
          continue;
        }
        int& n = number[static_cast<size_t>(find(pt.res[0]))];
        if (n < 0)
          n = groups++;
        pt.link = n;
      }
}

} // namespace

namespace {

/// What one device of a stage costs: its F, B and W and activation sizes over the stage's
/// layers at its share of the samples, with its compressed boundaries' encode and decode
/// passes and recomputation. `cache` keeps the profile look-ups of devices alike.
void add_device_costs(stage_rt& st, const cluster& c, const model_spec& model,
                      const profile_table& profile, const stage_plan& sp, size_t k, compression in,
                      compression out, std::map<cost_key, stage_device_cost>& cache) {
  const auto& dev = c.devices[static_cast<size_t>(sp.devices[k])];
  cost_key key{.kind = dev.kind,
               .memory = dev.memory_bytes,
               .fp32 = dev.fp32_flops,
               .bf16 = dev.bf16_flops,
               .mem_bw = dev.mem_bandwidth_Bps,
               .samples = sp.samples[k],
               .first = sp.first_layer,
               .last = sp.last_layer};
  auto it = cache.find(key);
  if (it == cache.end()) {
    stage_device_cost sum;
    for (int l = sp.first_layer; l < sp.last_layer; ++l) {
      const auto lc = profile.cost(dev, l, sp.samples[k]);
      sum.f += lc.f_s;
      sum.b += lc.b_s;
      sum.w += lc.w_s;
      sum.act_b += static_cast<double>(lc.act_until_b);
      sum.act_w += static_cast<double>(lc.act_until_w);
    }
    it = cache.emplace(key, sum).first;
  }
  // Compressed boundaries: this device's encode and decode passes (codec_cost.hpp).
  const auto codec = stage_codec_s(dev, model, in, out, sp.samples[k], profile);
  // Recomputation (model_spec.hpp's with_recompute, the planner's rule too).
  const stage_figures fig =
      with_recompute({.f_s = it->second.f,
                      .b_s = it->second.b,
                      .w_s = it->second.w,
                      .act_until_b = it->second.act_b,
                      .act_until_w = it->second.act_w,
                      .rebuilt_bytes = 0},
                     sp.recompute, model, sp.first_layer, sp.last_layer, sp.samples[k]);
  st.dev_f.push_back(fig.f_s + codec.f);
  st.dev_b.push_back(fig.b_s + codec.b);
  st.dev_w.push_back(fig.w_s);
  st.act_b.push_back(fig.act_until_b);
  st.act_w.push_back(fig.act_until_w);
  st.rebuilt.push_back(fig.rebuilt_bytes);
  st.f = std::max(st.f, st.dev_f.back());
  st.b = std::max(st.b, st.dev_b.back());
  st.w = std::max(st.w, fig.w_s);
}

/// The links of the step's control messages (simulator.hpp): from the coordinator's node
/// to the stage's, and from the stage's node to each of its devices'. Also each device's
/// optimizer step.
void add_control(world& w, stage_rt& st, const cluster& c, const profile_table& profile,
                 const plan& p, const stage_plan& sp) {
  const auto node_of = [&](int d) { return c.devices[static_cast<size_t>(d)].node; };
  const int lead = sp.devices.front();
  const int coordinator = p.pipelines.front().stages.front().devices.front();
  st.control_pair = node_of(coordinator) == node_of(lead) ? -1 : w.pair_of(coordinator, lead);
  for (size_t k = 0; k < sp.devices.size(); ++k) {
    const int d = sp.devices[k];
    st.apart_pairs.push_back(node_of(d) == node_of(lead) ? -1 : w.pair_of(lead, d));
    st.dev_opt.push_back(
        profile.optimizer_s(c.devices[static_cast<size_t>(d)], sp.first_layer, sp.last_layer));
  }
}

/// Stage `si` of pipeline `pi`, whose first stage is world stage `base`: its layers,
/// devices, op costs, state and control links.
stage_rt lay_out_stage(world& w, const cluster& c, const model_spec& model,
                       const profile_table& profile, const plan& p, size_t pi, size_t si, int base,
                       std::map<cost_key, stage_device_cost>& cache) {
  const auto& pp = p.pipelines[pi];
  const auto& sp = pp.stages[si];
  const bool last = si + 1 == pp.stages.size();
  const compression in = si > 0 ? pp.stages[si - 1].send_compression : compression::none;
  stage_rt st;
  st.pipeline = static_cast<int>(pi);
  st.stage = static_cast<int>(si);
  st.first_layer = sp.first_layer;
  st.last_layer = sp.last_layer;
  st.devices = sp.devices;
  st.samples = sp.samples;
  st.schedule = static_cast<int>(pi);
  st.prev = si > 0 ? base + static_cast<int>(si) - 1 : -1;
  st.next = si + 1 < pp.stages.size() ? base + static_cast<int>(si) + 1 : -1;
  for (int l = sp.first_layer; l < sp.last_layer; ++l)
    st.state += static_cast<double>(model.layers[static_cast<size_t>(l)].state_bytes());
  for (size_t k = 0; k < sp.devices.size(); ++k)
    add_device_costs(st, c, model, profile, sp, k, in,
                     last ? compression::none : sp.send_compression, cache);
  add_control(w, st, c, profile, p, sp);
  return st;
}

/// The schedule of pipeline `pi`, whose first stage is world stage `base`. Replicated
/// pipelines (same kind, shape and costs) share one schedule, since the greedy scheduler is
/// the expensive part of a large plan: their stages point to the first one's, and their own
/// slot stays empty.
void add_schedule(world& w, const plan& p, size_t pi, int base, const greedy_options& greedy,
                  std::vector<std::vector<stage_cost>>& schedule_costs,
                  std::vector<int>& first_stage) {
  const auto& pp = p.pipelines[pi];
  const auto costs = stage_costs_of(w, static_cast<int>(pi), 0.0);
  int same = -1;
  for (size_t q = 0; q < pi && same < 0; ++q)
    if (p.pipelines[q].schedule == pp.schedule &&
        p.pipelines[q].micro_batches == pp.micro_batches && schedule_costs[q] == costs)
      same = static_cast<int>(q);
  if (same >= 0) {
    for (size_t si = 0; si < pp.stages.size(); ++si)
      w.stages[static_cast<size_t>(base) + si].schedule =
          w.stages[static_cast<size_t>(first_stage[static_cast<size_t>(same)])].schedule;
    w.schedules.push_back({});
  } else {
    w.schedules.push_back(schedule_of(pp, costs, greedy));
  }
  schedule_costs.push_back(costs);
  first_stage.push_back(base);
}

} // namespace

world build_world(const cluster& c, const model_spec& model, const profile_table& profile,
                  const plan& p, const link_timeline& timeline, const greedy_options& greedy) {
  world w;
  w.c = &c;
  w.model = &model;
  w.timeline = &timeline;
  for (int d = 0; d < static_cast<int>(c.devices.size()); ++d)
    w.device_rates.push_back(timeline.device_history(c, d));
  std::map<cost_key, stage_device_cost> cache;
  std::vector<std::vector<stage_cost>> schedule_costs; // per pipeline
  std::vector<int> first_stage;                        // per pipeline
  for (size_t pi = 0; pi < p.pipelines.size(); ++pi) {
    const auto& pp = p.pipelines[pi];
    const int base = static_cast<int>(w.stages.size());
    for (size_t si = 0; si < pp.stages.size(); ++si)
      w.stages.push_back(lay_out_stage(w, c, model, profile, p, pi, si, base, cache));
    for (size_t si = 0; si + 1 < pp.stages.size(); ++si) {
      auto& s0 = w.stages[static_cast<size_t>(base) + si];
      auto& s1 = w.stages[static_cast<size_t>(base) + si + 1];
      add_parts(w, s0, s1, pp.stages[si].send_compression, s0.act_parts);
      add_parts(w, s1, s0, pp.stages[si].send_compression, s1.grad_parts);
    }
    w.micro_batches.push_back(pp.micro_batches);
    add_schedule(w, p, pi, base, greedy, schedule_costs, first_stage);
  }
  assign_groups(w);
  return w;
}

std::vector<stage_cost> stage_costs_of(world& w, int index, double at_s) {
  std::vector<stage_cost> out;
  for (const auto& st : w.stages) {
    if (st.pipeline != index)
      continue;
    stage_cost sc;
    sc.f = st.f;
    sc.b = st.b;
    sc.w = st.w;
    for (const auto& pt : st.act_parts) {
      const auto& h = w.histories[static_cast<size_t>(pt.pair)];
      sc.comm_to_next = std::max(sc.comm_to_next, transfer_duration(h, at_s, pt.bytes));
    }
    // The tightest device decides: its free memory in units of its own activation sizes,
    // expressed in the largest device's units (stage_cost has one size per stage).
    sc.activation_bytes = *std::max_element(st.act_b.begin(), st.act_b.end());
    sc.weight_grad_bytes = *std::max_element(st.act_w.begin(), st.act_w.end());
    sc.memory_limit = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < st.devices.size(); ++k) {
      const double free = w.c->devices[static_cast<size_t>(st.devices[k])].usable_memory_bytes() -
                          st.state - st.rebuilt[k];
      const double scale = st.act_b[k] > 0 ? sc.activation_bytes / st.act_b[k] : 1.0;
      sc.memory_limit = std::min(sc.memory_limit, free * scale);
    }
    out.push_back(sc);
  }
  return out;
}

} // namespace deepcee::runtime::sim_detail

namespace deepcee::runtime {

double message_latency_s(const std::vector<link_timeline::piece>& link, double t_s) {
  return link.empty() ? 0.0 : params_at(link, t_s).latency_s;
}

double apart_answer_s(const std::vector<link_timeline::piece>& link, double sent_s,
                      double answered_s, double compute_s) {
  const double computed = std::clamp(compute_s, 0.0, std::max(0.0, answered_s - sent_s));
  return sent_s + computed + 2.0 * message_latency_s(link, sent_s);
}

double apart_round_trip_s(const cluster& c, const stage_plan& st) {
  double trip = 0;
  const int lead = st.devices.at(0);
  const auto node_of = [&](int d) { return c.devices.at(static_cast<size_t>(d)).node; };
  for (int d : st.devices)
    if (node_of(d) != node_of(lead))
      trip = std::max(trip, 2.0 * c.link_between(lead, d).latency_s);
  return trip;
}

pipeline_schedule schedule_of(const pipeline_plan& pipeline, const std::vector<stage_cost>& costs,
                              const greedy_options& options) {
  const int stages = static_cast<int>(pipeline.stages.size());
  if (pipeline.schedule != schedule_kind::greedy)
    return make_schedule(pipeline.schedule, stages, pipeline.micro_batches);
  // The greedy scheduler wants F and B to take time; a stage holding only the embedding
  // has no input gradient to compute, so give it a negligible one.
  auto positive = costs;
  for (auto& c : positive) {
    c.f = std::max(c.f, 1e-12);
    c.b = std::max(c.b, 1e-12);
  }
  try {
    return make_greedy_schedule(positive, pipeline.micro_batches, options);
  } catch (const std::invalid_argument&) {
    // Memory cannot hold even one micro-batch somewhere: schedule without the limit and let
    // the simulator flag the device out of memory, which says more than a refusal.
    auto unlimited = positive;
    for (auto& c : unlimited)
      c.memory_limit = std::numeric_limits<double>::infinity();
    return make_greedy_schedule(unlimited, pipeline.micro_batches, options);
  }
}

std::vector<stage_cost> pipeline_stage_costs(const cluster& c, const profile_table& profile,
                                             const plan& p, int index) {
  if (index < 0 || index >= static_cast<int>(p.pipelines.size()))
    throw std::invalid_argument("pipeline_stage_costs: no pipeline " + std::to_string(index));
  plan one = p;
  one.pipelines = {p.pipelines[static_cast<size_t>(index)]};
  one.pipelines[0].schedule = schedule_kind::one_f_one_b; // the costs do not depend on it
  const link_timeline none;
  auto w = sim_detail::build_world(c, profile.model(), profile, one, none, {});
  return sim_detail::stage_costs_of(w, 0, 0.0);
}

} // namespace deepcee::runtime
