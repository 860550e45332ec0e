#include "runtime/planner/plan_estimate.hpp"

#include "runtime/cluster/codec_cost.hpp"
#include "runtime/cluster/network_path.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace deepcee::runtime {

link_params effective_link(const cluster& c, int a, int b, link_model model) {
  if (a == b)
    return c.link_between(a, b);
  if (model == link_model::real) {
    // What the simulator drains a transfer at: the link, capped by the nodes' interfaces.
    link_params l = c.link_between(a, b);
    l.bandwidth_Bps = std::min(l.bandwidth_Bps, nic_cap_between(c, a, b));
    return l;
  }
  return c.devices[size_t(a)].node == c.devices[size_t(b)].node ? c.links.same_node
                                                                : c.links.same_region;
}

namespace {

/// slowest_link looks at the first 4 devices of each side: 16 pairs see every kind of link
/// between two stages of devices that sit together, at a fixed cost for stages of hundreds.
constexpr size_t representative_devices = 4;

/// A stage member as the estimate sees it: devices of one figure class with the same samples
/// and memory cost the same.
using member_key = std::tuple<int, int, double>;

/// Whether `k` is new to `seen` (and adds it). A stage has few distinct members, so a short
/// list, reused from stage to stage, beats a tree allocated for each.
bool first_of_kind(std::vector<member_key>& seen, const member_key& k) {
  if (std::find(seen.begin(), seen.end(), k) != seen.end())
    return false;
  seen.push_back(k);
  return true;
}

/// The slowest of a few representative pairs, in both directions (activations go forward,
/// their gradients come back over the reverse link, which may be the slower uplink): stages
/// are sets of devices that sit together, so the first few of each side see the same links
/// as the rest.
link_params slowest_link(const cluster& c, const std::vector<int>& from, const std::vector<int>& to,
                         link_model model) {
  link_params worst{0, std::numeric_limits<double>::infinity()};
  const size_t nf = std::min(from.size(), representative_devices);
  const size_t nt = std::min(to.size(), representative_devices);
  for (size_t i = 0; i < nf; ++i)
    for (size_t j = 0; j < nt; ++j)
      for (const link_params& l :
           {effective_link(c, from[i], to[j], model), effective_link(c, to[j], from[i], model)}) {
        worst.bandwidth_Bps = std::min(worst.bandwidth_Bps, l.bandwidth_Bps);
        worst.latency_s = std::max(worst.latency_s, l.latency_s);
      }
  return worst;
}

} // namespace

std::vector<stage_cost> pipeline_costs(const cost_cache& costs, const plan& p, int pipeline,
                                       link_model model) {
  const pipeline_plan& pp = p.pipelines[size_t(pipeline)];
  const cluster& c = costs.cl();
  const model_spec& spec = costs.profiles().model();
  const int stages = static_cast<int>(pp.stages.size());
  std::vector<stage_cost> out(static_cast<size_t>(stages));
  std::vector<member_key> seen;
  for (int s = 0; s < stages; ++s) {
    const stage_plan& st = pp.stages[size_t(s)];
    const compression in = s > 0 ? pp.stages[size_t(s) - 1].send_compression : compression::none;
    const compression out_comp = s + 1 < stages ? st.send_compression : compression::none;
    stage_cost& sc = out[size_t(s)];
    sc.f = sc.b = sc.w = 0;
    sc.activation_bytes = sc.weight_grad_bytes = 0;
    double state = costs.range_state(st.first_layer, st.last_layer);
    double limit = std::numeric_limits<double>::infinity();
    seen.clear();
    for (size_t i = 0; i < st.devices.size(); ++i) {
      int d = st.devices[i], n = st.samples[i];
      if (!first_of_kind(seen, {costs.figure_class(d), n, c.devices[size_t(d)].memory_bytes}))
        continue;
      // Compressed boundaries: the device's encode and decode passes (codec_cost.hpp).
      const auto codec =
          stage_codec_s(c.devices[size_t(d)], spec, in, out_comp, n, costs.profiles());
      const stage_figures fig = costs.stage(d, st.first_layer, st.last_layer, n, st.recompute);
      sc.f = std::max(sc.f, fig.f_s + codec.f);
      sc.b = std::max(sc.b, fig.b_s + codec.b);
      sc.w = std::max(sc.w, fig.w_s);
      sc.activation_bytes = std::max(sc.activation_bytes, fig.act_until_b);
      sc.weight_grad_bytes = std::max(sc.weight_grad_bytes, fig.act_until_w);
      // A recomputing stage's rebuilt activations come on top of what it keeps, during B.
      limit =
          std::min(limit, c.devices[size_t(d)].usable_memory_bytes() - state - fig.rebuilt_bytes);
    }
    sc.memory_limit = std::max(limit, 0.0);
    sc.activation_bytes = std::max(sc.activation_bytes, 1.0);
    sc.weight_grad_bytes = std::max(sc.weight_grad_bytes, 1.0);
    if (s + 1 < stages) {
      link_params l = slowest_link(c, st.devices, pp.stages[size_t(s) + 1].devices, model);
      double bytes = double(spec.transfer_bytes(p.micro_batch_size, st.send_compression));
      sc.comm_to_next = l.latency_s + bytes / l.bandwidth_Bps;
    }
  }
  return out;
}

double allreduce_time(const cluster& c, const std::vector<int>& devices, double bytes,
                      link_model model) {
  const size_t n = devices.size();
  if (n < 2 || bytes <= 0)
    return 0;
  auto ring = [&](const std::vector<int>& members, double payload) {
    size_t k = members.size();
    if (k < 2)
      return 0.0;
    double bw = std::numeric_limits<double>::infinity(), lat = 0;
    for (size_t i = 0; i < k; ++i) {
      link_params l = effective_link(c, members[i], members[(i + 1) % k], model);
      bw = std::min(bw, l.bandwidth_Bps);
      lat = std::max(lat, l.latency_s);
    }
    return 2.0 * double(k - 1) / double(k) * payload / bw + 2.0 * double(k - 1) * lat;
  };
  double flat = ring(devices, bytes);
  // Hierarchical: reduce inside each node, a ring over one leader per node, broadcast.
  std::map<int, std::vector<int>> by_node;
  for (int d : devices)
    by_node[c.devices[size_t(d)].node].push_back(d);
  if (by_node.size() == 1 || by_node.size() == n)
    return flat;
  double intra = 0;
  std::vector<int> leaders;
  for (auto& [node, members] : by_node) {
    intra = std::max(intra, ring(members, bytes));
    leaders.push_back(members.front());
  }
  return std::min(flat, intra + ring(leaders, bytes));
}

namespace {

bool same_stage_cost(const stage_cost& a, const stage_cost& b) {
  return a.f == b.f && a.b == b.b && a.w == b.w && a.comm_to_next == b.comm_to_next &&
         a.activation_bytes == b.activation_bytes && a.weight_grad_bytes == b.weight_grad_bytes &&
         a.memory_limit == b.memory_limit;
}

/// Pipeline `pp`'s timing under its schedule. A greedy schedule that cannot hold one
/// micro-batch is priced as ZB-H1 and clears `fits`; its peak is then the one micro-batch
/// that greedy would need at least, so the shortfall says how far the plan is from fitting.
schedule_timing pipeline_timing(const std::vector<stage_cost>& sc, const pipeline_plan& pp,
                                bool& fits) {
  const int stages = static_cast<int>(sc.size());
  try {
    if (pp.schedule == schedule_kind::greedy)
      return make_timed_greedy_schedule(sc, pp.micro_batches).timing;
    return time_schedule(make_schedule(pp.schedule, stages, pp.micro_batches), sc);
  } catch (const std::invalid_argument&) {
    fits = false;
    schedule_timing t =
        time_schedule(make_schedule(schedule_kind::zb_h1, stages, pp.micro_batches), sc);
    for (int s = 0; s < stages; ++s)
      t.peak_bytes[size_t(s)] =
          std::max(sc[size_t(s)].activation_bytes, sc[size_t(s)].weight_grad_bytes);
    return t;
  }
}

/// Whether each distinct member (figure class, samples, memory) of pipeline `pp`'s stages
/// holds its state and the activations its schedule keeps at its peak (clears e.fits if
/// not). The timing's peak is the stage's, priced at its largest member's activation sizes;
/// a member with fewer samples keeps the same micro-batches in flight, so its peak scales
/// with its sizes.
void price_stage_memory(const cost_cache& costs, const pipeline_plan& pp,
                        const std::vector<stage_cost>& sc, const schedule_timing& timing,
                        double memory_fraction, plan_estimate& e) {
  const cluster& c = costs.cl();
  const int stages = static_cast<int>(pp.stages.size());
  std::vector<member_key> seen;
  for (int s = 0; s < stages; ++s) {
    const stage_plan& st = pp.stages[size_t(s)];
    const stage_cost& cost = sc[size_t(s)];
    double state = costs.range_state(st.first_layer, st.last_layer);
    seen.clear();
    for (size_t i = 0; i < st.devices.size(); ++i) {
      int d = st.devices[i], n = st.samples[i];
      if (!first_of_kind(seen, {costs.figure_class(d), n, c.devices[size_t(d)].memory_bytes}))
        continue;
      const stage_figures fig = costs.stage(d, st.first_layer, st.last_layer, n, st.recompute);
      const double scale = std::max(fig.act_until_b / cost.activation_bytes,
                                    fig.act_until_w / cost.weight_grad_bytes);
      // A recomputing stage holds one micro-batch's rebuilt activations while its B runs:
      // counted on top of its peak (an upper bound; the simulator counts it at each B).
      double need = state + timing.peak_bytes[size_t(s)] * std::min(1.0, scale) + fig.rebuilt_bytes;
      const double usable = memory_fraction * c.devices[size_t(d)].memory_bytes;
      if (need > usable) {
        e.fits = false;
        // The plan's shortfall is its worst device's.
        if (e.shortfall.device < 0 || need / usable > e.shortfall.need / e.shortfall.usable)
          e.shortfall = {d, need, usable};
      }
    }
  }
}

/// The gradient all-reduce: layers with the same holders are reduced together; a device
/// takes part in the reductions of every holder set it belongs to, one after the other, and
/// the slowest device's sum is the time. Between consecutive stage bounds (`cuts`) every
/// layer has the same holders: one bucket per segment, buckets with the same holders merged.
double allreduce_estimate(const cluster& c, const model_spec& spec, const plan& p,
                          const std::set<int>& cuts, link_model model) {
  std::map<std::vector<int>, double> bytes_of_set;
  for (auto it = cuts.begin(); it != cuts.end() && std::next(it) != cuts.end(); ++it) {
    int a = *it, z = *std::next(it);
    std::vector<int> hs;
    for (const auto& pp : p.pipelines)
      for (const auto& st : pp.stages)
        if (st.first_layer <= a && a < st.last_layer)
          hs.insert(hs.end(), st.devices.begin(), st.devices.end());
    std::sort(hs.begin(), hs.end());
    double bytes = 0;
    for (int l = a; l < z; ++l)
      bytes += double(spec.layers[size_t(l)].grad_bytes);
    bytes_of_set[hs] += bytes;
  }
  std::map<int, double> per_device;
  for (const auto& [hs, bytes] : bytes_of_set) {
    double t = allreduce_time(c, hs, bytes, model);
    for (int d : hs)
      per_device[d] += t;
  }
  double slowest = 0;
  for (const auto& [d, t] : per_device)
    slowest = std::max(slowest, t);
  return slowest;
}

/// Across regions the simulator sends every flow of a directed region pair through one
/// shared pipe, so pipelines that cross the same WAN link queue behind each other: the step
/// takes at least the busiest pipe's total bytes over its bandwidth.
double wan_queue_s(const cluster& c, const model_spec& spec, const plan& p, link_model model) {
  std::map<std::pair<int, int>, double> wan_s;
  for (const auto& pp : p.pipelines)
    for (size_t s = 0; s + 1 < pp.stages.size(); ++s) {
      int a = pp.stages[s].devices.front(), b = pp.stages[s + 1].devices.front();
      int ra = c.devices[size_t(a)].region, rb = c.devices[size_t(b)].region;
      if (ra == rb)
        continue;
      double bytes = double(spec.transfer_bytes(p.micro_batch_size, pp.stages[s].send_compression));
      // Activations on the path from a to b, their gradients back from b to a.
      wan_s[{ra, rb}] += pp.micro_batches * bytes / effective_link(c, a, b, model).bandwidth_Bps;
      wan_s[{rb, ra}] += pp.micro_batches * bytes / effective_link(c, b, a, model).bandwidth_Bps;
    }
  double busiest = 0;
  for (const auto& [pair, t] : wan_s)
    busiest = std::max(busiest, t);
  return busiest;
}

/// A node's interface is one FIFO per direction in the simulator (network_path.hpp): every
/// activation and gradient that leaves (or enters) a node with a `nic` queues there, from
/// every pipeline, so the step takes at least the busiest direction's bytes over its rate.
/// The rows between two stages' devices (rows_between) say which bytes cross which nodes.
double nic_queue_s(const cluster& c, const model_spec& spec, const plan& p) {
  std::map<std::pair<int, bool>, double> bytes_at; // (node, sending) -> bytes per step
  for (const auto& pp : p.pipelines)
    for (size_t s = 0; s + 1 < pp.stages.size(); ++s) {
      const auto& from = pp.stages[s];
      const auto& to = pp.stages[s + 1];
      for (const auto& r : rows_between(from.samples, to.samples)) {
        const int na = c.devices[size_t(from.devices[r.from])].node;
        const int nb = c.devices[size_t(to.devices[r.to])].node;
        if (na == nb)
          continue;
        // Both directions: activations a -> b, gradients b -> a.
        const double bytes = double(pp.micro_batches) *
                             double(spec.transfer_bytes(r.samples, from.send_compression));
        for (const auto& key :
             {std::pair{na, true}, std::pair{nb, false}, std::pair{nb, true}, std::pair{na, false}})
          bytes_at[key] += bytes;
      }
    }
  double busiest = 0;
  for (const auto& [key, bytes] : bytes_at)
    if (const auto& nic = c.nodes[size_t(key.first)].nic_Bps)
      busiest = std::max(busiest, bytes / *nic);
  return busiest;
}

/// The slowest device's optimizer step (profile_table::optimizer_s, the simulator's too).
double optimizer_time(const cost_cache& costs, const plan& p) {
  double slowest = 0;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      for (int d : st.devices)
        slowest = std::max(slowest, costs.range_optimizer(d, st.first_layer, st.last_layer));
  return slowest;
}

/// Every stage boundary of every pipeline.
std::set<int> stage_cuts(const plan& p) {
  std::set<int> cuts;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages) {
      cuts.insert(st.first_layer);
      cuts.insert(st.last_layer);
    }
  return cuts;
}

std::vector<std::vector<stage_cost>> all_pipeline_costs(const cost_cache& costs, const plan& p,
                                                        link_model model) {
  std::vector<std::vector<stage_cost>> out;
  for (int pi = 0; pi < static_cast<int>(p.pipelines.size()); ++pi)
    out.push_back(pipeline_costs(costs, p, pi, model));
  return out;
}

/// Slack for the rounding of sums that makespan_bound takes in another order than
/// time_schedule.
constexpr double bound_rounding = 1e-9;

/// plan_bound without its all-reduce (0), the costliest part on a large cluster.
plan_bound bound_before_allreduce(const cost_cache& costs, const plan& p, link_model model,
                                  const std::vector<std::vector<stage_cost>>& sc) {
  const model_spec& spec = costs.profiles().model();
  plan_bound b;
  for (size_t pi = 0; pi < sc.size(); ++pi) {
    const int m = p.pipelines[pi].micro_batches;
    b.pipeline_s = std::max(b.pipeline_s, (1 - bound_rounding) * makespan_bound(sc[pi], m));
    for (const auto& cost : sc[pi])
      b.transfer_s = std::max(b.transfer_s, m * cost.comm_to_next);
  }
  b.pipeline_s = std::max(b.pipeline_s, wan_queue_s(costs.cl(), spec, p, model));
  if (model == link_model::real)
    b.pipeline_s = std::max(b.pipeline_s, nic_queue_s(costs.cl(), spec, p));
  b.optimizer_s = optimizer_time(costs, p);
  return b;
}

double plan_allreduce(const cost_cache& costs, const plan& p, link_model model) {
  return allreduce_estimate(costs.cl(), costs.profiles().model(), p, stage_cuts(p), model);
}

/// estimate_plan over the stage costs `sc` and the all-reduce and optimizer of `b`.
plan_estimate estimate_from(const cost_cache& costs, const plan& p, link_model model,
                            double memory_fraction, const std::vector<std::vector<stage_cost>>& sc,
                            const plan_bound& b) {
  const model_spec& spec = costs.profiles().model();
  plan_estimate e;
  // Replicated pipelines (same schedule, micro-batches and stage costs) time the same: each
  // distinct one is timed once (the greedy scheduler is the costly part of an estimate).
  struct timed {
    schedule_kind kind;
    int micro_batches;
    const std::vector<stage_cost>* costs;
    schedule_timing timing;
    bool fits;
  };
  std::vector<timed> done;
  for (size_t pi = 0; pi < p.pipelines.size(); ++pi) {
    const pipeline_plan& pp = p.pipelines[pi];
    const auto& pc = sc[pi];
    auto same = std::find_if(done.begin(), done.end(), [&](const timed& t) {
      return t.kind == pp.schedule && t.micro_batches == pp.micro_batches &&
             std::equal(t.costs->begin(), t.costs->end(), pc.begin(), pc.end(), same_stage_cost);
    });
    if (same == done.end()) {
      bool fits = true;
      schedule_timing t = pipeline_timing(pc, pp, fits);
      done.push_back({pp.schedule, pp.micro_batches, &pc, std::move(t), fits});
      same = done.end() - 1;
    }
    e.fits = e.fits && same->fits;
    const schedule_timing& timing = same->timing;
    e.pipeline_s = std::max(e.pipeline_s, timing.makespan);
    price_stage_memory(costs, pp, pc, timing, memory_fraction, e);
  }
  e.allreduce_s = b.allreduce_s;
  e.optimizer_s = b.optimizer_s;
  e.pipeline_s = std::max(e.pipeline_s, wan_queue_s(costs.cl(), spec, p, model));
  if (model == link_model::real)
    e.pipeline_s = std::max(e.pipeline_s, nic_queue_s(costs.cl(), spec, p));
  e.step_s = e.pipeline_s + e.allreduce_s + e.optimizer_s;
  e.samples_per_s = e.step_s > 0 ? p.global_batch() / e.step_s : 0;
  return e;
}

} // namespace

double compute_bound_s(const cost_cache& costs, const plan& p) {
  double bound = 0;
  for (int pi = 0; pi < static_cast<int>(p.pipelines.size()); ++pi)
    for (const auto& sc : pipeline_costs(costs, p, pi, link_model::real))
      bound = std::max(bound, p.pipelines[size_t(pi)].micro_batches * (sc.f + sc.b + sc.w));
  return bound;
}

plan_estimate estimate_plan(const cost_cache& costs, const plan& p, link_model model,
                            double memory_fraction) {
  const auto sc = all_pipeline_costs(costs, p, model);
  plan_bound b = bound_before_allreduce(costs, p, model, sc);
  b.allreduce_s = plan_allreduce(costs, p, model);
  return estimate_from(costs, p, model, memory_fraction, sc, b);
}

plan_bound bound_plan(const cost_cache& costs, const plan& p, link_model model) {
  plan_bound b = bound_before_allreduce(costs, p, model, all_pipeline_costs(costs, p, model));
  b.allreduce_s = plan_allreduce(costs, p, model);
  return b;
}

std::optional<plan_estimate> estimate_plan_within(const cost_cache& costs, const plan& p,
                                                  link_model model, double memory_fraction,
                                                  double limit_s) {
  const auto sc = all_pipeline_costs(costs, p, model);
  plan_bound b = bound_before_allreduce(costs, p, model, sc);
  // The all-reduce only adds to the bound: a plan over the limit without it is skipped
  // before it is computed.
  if (b.limit_s() > limit_s)
    return std::nullopt;
  b.allreduce_s = plan_allreduce(costs, p, model);
  if (b.limit_s() > limit_s)
    return std::nullopt;
  return estimate_from(costs, p, model, memory_fraction, sc, b);
}

} // namespace deepcee::runtime
