#include "runtime/watch/snapshot_builder.hpp"

#include <algorithm>
#include <utility>

namespace deepcee::runtime {

snapshot_builder::snapshot_builder(snapshot_header header, plan p, cluster c,
                                   memory_estimate estimate)
    : plan_(std::move(p)), cluster_(std::move(c)), estimate_(std::move(estimate)) {
  auto& s = last_;
  s.job = std::move(header.job);
  s.model = std::move(header.model);
  s.time_mode = std::move(header.time_mode);
  s.groups = std::move(header.groups);
  s.steps = header.steps;
  s.cluster = cluster_.name;
  fill_layout(s);
  fill_allocation(s);
}

void snapshot_builder::fill_layout(job_snapshot& s) const {
  s.strategy = plan_.strategy;
  s.stages.clear();
  for (size_t p = 0; p < plan_.pipelines.size(); ++p) {
    const auto& pipe = plan_.pipelines[p];
    for (size_t k = 0; k < pipe.stages.size(); ++k) {
      const auto& st = pipe.stages[k];
      stage_status status{int(p), int(k), {}, st.first_layer, st.last_layer, {}, 0};
      for (int d : st.devices)
        status.devices.push_back(device_name(d));
      s.stages.push_back(std::move(status));
    }
  }
  const auto estimate = estimate_(plan_);
  s.devices.clear();
  for (const auto& d : cluster_.devices) {
    device_status status{d.name, d.kind, -1, -1, 0, 0, d.memory_bytes};
    for (const auto& e : estimate.devices)
      if (e.device == d.id) {
        status.pipeline = e.pipeline;
        status.stage = e.stage;
        status.memory_used_bytes = e.peak_bytes;
      }
    s.devices.push_back(std::move(status));
  }
}

void snapshot_builder::plan_in_force(const plan& p) {
  const bool moved = !same_layout(plan_, p);
  if (!moved && allocation_of(plan_) == allocation_of(p))
    return;
  plan_ = p;
  if (moved)
    fill_layout(last_);
  fill_allocation(last_);
}

std::string snapshot_builder::device_name(int device) const {
  if (device >= 0 && device < static_cast<int>(cluster_.devices.size()))
    return cluster_.devices[static_cast<size_t>(device)].name;
  return "device " + std::to_string(device);
}

job_snapshot snapshot_builder::initial(int resumed_step) const {
  auto s = last_;
  s.step = resumed_step;
  return s;
}

void snapshot_builder::fill_stages(job_snapshot& s, const step_facts& f) const {
  for (size_t k = 0; k < s.stages.size(); ++k) {
    auto& stage = s.stages[k];
    stage.ops = k < f.stage_ops.size() ? f.stage_ops[k] : std::vector<timeline_op>{};
    std::sort(stage.ops.begin(), stage.ops.end(),
              [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
    stage.bubble = bubble_share(stage.ops, f.start_s, f.compute_end_s);
  }
  // A stage's devices share its ops (each on its rows): their busy time is the stage's.
  const double step_s = f.end_s - f.start_s;
  for (auto& d : s.devices) {
    d.utilization = 0;
    for (const auto& stage : s.stages)
      if (stage.pipeline == d.pipeline && stage.stage == d.stage && step_s > 0)
        d.utilization = std::clamp(busy_seconds(stage.ops) / step_s, 0.0, 1.0);
  }
}

void snapshot_builder::fill_allocation(job_snapshot& s) const {
  s.allocation = {};
  for (const auto& pipe : plan_.pipelines) {
    s.allocation.micro_batches.push_back(pipe.micro_batches);
    for (size_t k = 0; k < pipe.stages.size(); ++k) {
      const auto& st = pipe.stages[k];
      for (size_t i = 0; i < st.devices.size(); ++i)
        s.allocation.samples.push_back({device_name(st.devices[i]), st.samples[i]});
      if (k + 1 == pipe.stages.size())
        continue;
      const auto& next = pipe.stages[k + 1];
      for (const auto& r : rows_between(st.samples, next.samples))
        s.allocation.compression.push_back(
            {device_name(st.devices[r.from]) + " -> " + device_name(next.devices[r.to]),
             std::string(to_string(st.send_compression))});
    }
  }
}

void snapshot_builder::fill_links(job_snapshot& s, const step_facts& f) const {
  s.links.clear();
  for (const auto& l : f.links)
    s.links.push_back({.name = device_name(l.from) + " -> " + device_name(l.to),
                       .bandwidth_Bps = l.estimated.bandwidth_Bps,
                       .latency_s = l.estimated.latency_s,
                       .plan_bandwidth_Bps = l.assumed.bandwidth_Bps,
                       .plan_latency_s = l.assumed.latency_s,
                       .samples = l.samples,
                       .drifted = l.drifted,
                       .bytes_sent = l.carried.bytes,
                       .transfers = l.carried.transfers});
}

job_snapshot snapshot_builder::after_step(const step_facts& f) {
  auto& s = last_;
  s.step = f.step;
  s.loss = f.loss;
  if (f.loss)
    push_history(s.loss_history, *f.loss, history);
  s.clock_s = f.end_s;
  const double batch = plan_.global_batch();
  const double step_s = f.end_s - f.start_s;
  const bool wall = s.time_mode == "wall";
  s.real_samples_per_s.reset();
  s.emulated_samples_per_s.reset();
  if (wall && step_s > 0)
    s.real_samples_per_s = batch / step_s;
  else if (!wall && f.real_s > 0)
    s.real_samples_per_s = batch / f.real_s;
  if (!wall && step_s > 0)
    s.emulated_samples_per_s = batch / step_s;
  fill_stages(s, f);
  fill_links(s, f);
  s.dropped_messages = f.dropped_messages;
  record_history(s);
  return s;
}

void snapshot_builder::record_history(job_snapshot& s) {
  auto& h = history_;
  if (s.loss)
    h.loss.add(s.step, *s.loss);
  if (s.real_samples_per_s)
    h.real_samples_per_s.add(s.step, *s.real_samples_per_s);
  if (s.emulated_samples_per_s)
    h.emulated_samples_per_s.add(s.step, *s.emulated_samples_per_s);
  for (const auto& l : s.links)
    h.link_bandwidth_Bps[l.name].add(s.step, l.bandwidth_Bps);
  s.history = std::make_shared<const run_history>(h);
}

void snapshot_builder::validated(int step, double loss) {
  last_.val_loss = loss;
  last_.val_step = step;
  history_.validation.add(step, loss);
  last_.history = std::make_shared<const run_history>(history_);
}

void snapshot_builder::injected(job_event e) {
  ++last_.events_total;
  push_history(last_.events, std::move(e), recent);
}

void snapshot_builder::decided(adapter_decision d) {
  ++last_.decisions_by_kind[d.kind];
  push_history(last_.decisions, std::move(d), recent);
}

} // namespace deepcee::runtime
