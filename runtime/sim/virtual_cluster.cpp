#include "runtime/sim/virtual_cluster.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/sim/device_time.hpp"
#include "runtime/sim/simulator_world.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

namespace deepcee::runtime {

transfer_times link_fifo::send(const transfer_part& part, double send_s) {
  const int own[] = {part.link};
  const int* first = part.resources.empty() ? own : part.resources.data();
  const int* last = part.resources.empty() ? own + 1 : first + part.resources.size();
  transfer_times t;
  t.start_s = send_s;
  for (const int* k = first; k != last; ++k) {
    const auto li = static_cast<size_t>(*k);
    if (free_at_.size() <= li)
      free_at_.resize(li + 1, 0.0);
    t.start_s = std::max(t.start_s, free_at_[li]);
  }
  t.drained_s = t.start_s + drain_duration(part.history, t.start_s, part.bytes);
  t.arrival_s = t.drained_s + params_at(part.history, t.start_s).latency_s;
  for (const int* k = first; k != last; ++k)
    free_at_[static_cast<size_t>(*k)] = t.drained_s;
  return t;
}

bool virtual_stage::scripted() const {
  // An event at time 0 replaces the first piece rather than adding one.
  return std::any_of(rates.begin(), rates.end(), [](const auto& r) {
    return r.size() > 1 || (!r.empty() && (r.front().rate != 1 || r.front().killed));
  });
}

double virtual_stage::op_duration(op_kind k, double start_s) const {
  const auto& costs = k == op_kind::forward ? dev_f : k == op_kind::backward_input ? dev_b : dev_w;
  const bool is_scripted = scripted();
  const bool round_trips =
      std::any_of(apart.begin(), apart.end(), [](const auto& h) { return !h.empty(); });
  if ((!is_scripted && !round_trips) || costs.size() != rates.size())
    return op_time(k);
  double dt = 0;
  for (size_t d = 0; d < costs.size(); ++d) {
    const double one =
        is_scripted ? work_duration_or_stop(rates[d], start_s, costs[d], nodes.at(d)) : costs[d];
    const double trip = d < apart.size() ? 2.0 * message_latency_s(apart[d], start_s) : 0.0;
    dt = std::max(dt, one + trip); // its answer (simulator.hpp, control messages)
  }
  return dt;
}

double virtual_stage::step_begin(double t0) const {
  return step_begin_s(t0, control_latency(t0), std::min(dev_opt.size(), rates.size()),
                      [&](size_t d, double arrived) {
                        return work_duration_or_stop(rates[d], arrived, dev_opt[d], nodes.at(d));
                      });
}

double held_back_s(const virtual_stage& costs, double start_s, double now_s,
                   bool round_trips_waited) {
  if (!costs.scripted())
    return 0;
  double trip = 0;
  if (round_trips_waited)
    for (const auto& link : costs.apart)
      trip = std::max(trip, 2.0 * message_latency_s(link, start_s));
  const double took = std::max(0.0, now_s - start_s);
  const double work = std::max(0.0, took - trip);
  double slowed = work;
  for (size_t d = 0; d < costs.rates.size(); ++d)
    slowed =
        std::max(slowed, work_duration_or_stop(costs.rates[d], start_s, work, costs.nodes.at(d)));
  return slowed - work;
}

/// Owns copies of what the simulator's world points to, so the world outlives no input.
struct virtual_cluster::impl {
  cluster c;
  model_spec model;
  link_timeline timeline;
  std::optional<profile_table> profile; ///< for with_plan
  greedy_options greedy;
  sim_detail::world world;
  std::vector<std::vector<virtual_stage>> stages;
  std::vector<std::vector<int>> flat; ///< [pipeline][stage] -> world stage index
  sim_result scratch;                 ///< link statistics the world accumulates
  std::vector<double> ar;
};

namespace {

std::vector<transfer_part> parts_of(sim_detail::world& w, const std::vector<sim_detail::part>& in) {
  std::vector<transfer_part> out;
  for (const auto& p : in)
    out.push_back({.from = p.from,
                   .to = p.to,
                   .link = p.link,
                   .bytes = p.bytes,
                   .history = w.histories[static_cast<size_t>(p.pair)],
                   .resources = p.res});
  return out;
}

/// The transfer from device x to device y outside the pipeline's parts (a ring hop, a
/// gradient share): no sharing group, and no bytes until a message sets them.
transfer_part unsized_part(sim_detail::world& w, int x, int y) {
  return {.from = x,
          .to = y,
          .link = -1,
          .bytes = 0.0,
          .history = w.histories[static_cast<size_t>(w.pair_of(x, y))],
          .resources = w.resources_of(x, y)};
}

} // namespace

virtual_cluster::virtual_cluster(const cluster& c, const model_spec& model,
                                 const profile_table& profile, const plan& p,
                                 const link_timeline& timeline, const greedy_options& greedy)
    : impl_(std::make_unique<impl>()) {
  validate_plan(p, static_cast<int>(c.devices.size()), "plan");
  impl_->c = c;
  impl_->model = model;
  impl_->timeline = timeline;
  impl_->profile.emplace(profile);
  impl_->greedy = greedy;
  impl_->world =
      sim_detail::build_world(impl_->c, impl_->model, *impl_->profile, p, impl_->timeline, greedy);
  auto& w = impl_->world;
  impl_->stages.resize(p.pipelines.size());
  impl_->flat.resize(p.pipelines.size());
  for (size_t s = 0; s < w.stages.size(); ++s) {
    const auto& st = w.stages[s];
    virtual_stage vs;
    vs.f = st.f;
    vs.b = st.b;
    vs.w = st.w;
    vs.dev_f = st.dev_f;
    vs.dev_b = st.dev_b;
    vs.dev_w = st.dev_w;
    for (int d : st.devices) {
      vs.rates.push_back(w.device_rates[static_cast<size_t>(d)]);
      vs.nodes.push_back(c.nodes[static_cast<size_t>(c.devices[static_cast<size_t>(d)].node)].name);
    }
    vs.devices = st.devices;
    vs.coordinator_device = p.pipelines.front().stages.front().devices.front();
    if (st.control_pair >= 0)
      vs.control = w.histories[static_cast<size_t>(st.control_pair)];
    for (int pair : st.apart_pairs)
      vs.apart.push_back(pair < 0 ? std::vector<link_timeline::piece>{}
                                  : w.histories[static_cast<size_t>(pair)]);
    vs.dev_opt = st.dev_opt;
    const size_t n = st.devices.size();
    for (size_t j = 0; j < n && n > 1; ++j) {
      const int x = st.devices[j], y = st.devices[(j + 1) % n];
      vs.ring_parts.push_back(unsized_part(w, x, y));
    }
    vs.act_parts = parts_of(w, st.act_parts);
    vs.grad_parts = parts_of(w, st.grad_parts);
    for (size_t o = 0; o < w.stages.size(); ++o) {
      const auto& other = w.stages[o];
      if (other.pipeline == st.pipeline || other.last_layer <= st.first_layer ||
          st.last_layer <= other.first_layer)
        continue;
      const int x = st.devices.front(), y = other.devices.front();
      vs.share_parts[static_cast<int>(o)] = unsized_part(w, x, y);
    }
    impl_->stages[static_cast<size_t>(st.pipeline)].push_back(std::move(vs));
    impl_->flat[static_cast<size_t>(st.pipeline)].push_back(static_cast<int>(s));
  }
  impl_->scratch.device_count = static_cast<int>(c.devices.size());
  impl_->ar.assign(c.devices.size(), 0.0);
}

virtual_cluster::~virtual_cluster() = default;

const cluster& virtual_cluster::hardware() const {
  return impl_->c;
}
const model_spec& virtual_cluster::model() const {
  return impl_->model;
}
const profile_table& virtual_cluster::profile() const {
  return *impl_->profile;
}

std::unique_ptr<virtual_cluster> virtual_cluster::with_plan(const plan& p) const {
  return std::make_unique<virtual_cluster>(impl_->c, impl_->model, *impl_->profile, p,
                                           impl_->timeline, impl_->greedy);
}

std::unique_ptr<virtual_cluster> virtual_cluster::with_plan(const plan& p,
                                                            const link_timeline& timeline) const {
  return std::make_unique<virtual_cluster>(impl_->c, impl_->model, *impl_->profile, p, timeline,
                                           impl_->greedy);
}

const link_timeline& virtual_cluster::timeline() const {
  return impl_->timeline;
}

const pipeline_schedule& virtual_cluster::schedule(int pipeline) const {
  // Replicated pipelines share the first one's schedule (the world keeps an empty one in
  // their own slot), so the schedule is the one their stages point to.
  const auto& stages = impl_->flat.at(static_cast<size_t>(pipeline));
  if (stages.empty())
    throw std::invalid_argument("pipeline " + std::to_string(pipeline) + " has no stages");
  const auto& first = impl_->world.stages.at(static_cast<size_t>(stages.front()));
  return impl_->world.schedules.at(static_cast<size_t>(first.schedule));
}

const virtual_stage& virtual_cluster::stage(int pipeline, int stage) const {
  return impl_->stages.at(static_cast<size_t>(pipeline)).at(static_cast<size_t>(stage));
}

double virtual_cluster::finish_step(const std::vector<std::vector<double>>& stage_end,
                                    std::vector<trace_event>* trace) {
  std::vector<double> flat(impl_->world.stages.size(), 0.0);
  if (stage_end.size() != impl_->flat.size())
    throw std::invalid_argument("finish_step: " + std::to_string(stage_end.size()) +
                                " pipelines, the plan has " + std::to_string(impl_->flat.size()));
  for (size_t p = 0; p < stage_end.size(); ++p) {
    if (stage_end[p].size() != impl_->flat[p].size())
      throw std::invalid_argument("finish_step: wrong stage count of pipeline " +
                                  std::to_string(p));
    for (size_t s = 0; s < stage_end[p].size(); ++s)
      flat[static_cast<size_t>(impl_->flat[p][s])] = stage_end[p][s];
  }
  sim_options options;
  options.trace = trace != nullptr;
  auto& events = impl_->scratch.events;
  events.clear();
  const double end =
      sim_detail::finish_step(impl_->world, options, impl_->scratch, flat, impl_->ar);
  if (trace)
    for (auto& e : events)
      if (e.track < impl_->scratch.device_count) // the devices' rows, not the links'
        trace->push_back(std::move(e));
  events.clear();
  return end;
}

void virtual_cluster::begin_step(double t0, std::vector<trace_event>& trace) const {
  sim_options options;
  options.trace = true;
  sim_result r;
  std::vector<double> opt(impl_->c.devices.size(), 0.0);
  sim_detail::begin_step(impl_->world, options, r, t0, opt);
  for (auto& e : r.events)
    trace.push_back(std::move(e));
}

} // namespace deepcee::runtime
