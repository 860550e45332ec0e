#include "runtime/sim/simulator_world.hpp"

#include <algorithm>

namespace deepcee::runtime::sim_detail {

namespace {

/// Largest activation bytes a device of the stage holds at once, following the op list:
/// act_until_b from F to B, act_until_w from B to W; a recomputing stage also holds the
/// `rebuilt` activations of the micro-batch whose B runs, while it runs.
double peak_activations(const std::vector<schedule_op>& ops, double act_b, double act_w,
                        double rebuilt) {
  double fb = 0, bw = 0, peak = 0;
  for (const auto& op : ops) {
    if (op.kind == op_kind::forward)
      fb += 1;
    else if (op.kind == op_kind::backward_input) {
      peak = std::max(peak, fb * act_b + bw * act_w + rebuilt);
      fb -= 1, bw += 1;
    } else
      bw -= 1;
    peak = std::max(peak, fb * act_b + bw * act_w);
  }
  return peak;
}

} // namespace

void fill_stats(world& w, const plan& p, const profile_table& profile, sim_result& r,
                const std::vector<double>& busy, const std::vector<double>& ar,
                const std::vector<double>& opt, const std::vector<double>& first_stage_end,
                double t0, double total_s) {
  const double steps = static_cast<double>(r.step_times_s.size());
  r.step_time_s = total_s / steps;
  r.global_batch = p.global_batch();
  r.samples_per_s = r.step_time_s > 0 ? r.global_batch / r.step_time_s : 0.0;
  r.stages.assign(p.pipelines.size(), {});
  double peak_flops = 0.0;
  double bubble_sum = 0.0;
  for (size_t s = 0; s < w.stages.size(); ++s) {
    const auto& st = w.stages[s];
    const auto& ops =
        w.schedules[static_cast<size_t>(st.schedule)].stages[static_cast<size_t>(st.stage)];
    stage_stats ss;
    ss.pipeline = st.pipeline;
    ss.stage = st.stage;
    ss.f_s = st.f;
    ss.b_s = st.b;
    ss.w_s = st.w;
    for (const auto& pt : st.act_parts)
      ss.comm_to_next_s =
          std::max(ss.comm_to_next_s,
                   transfer_duration(w.histories[static_cast<size_t>(pt.pair)], t0, pt.bytes));
    ss.compute_end_s = first_stage_end[s] - t0;
    for (size_t k = 0; k < st.devices.size(); ++k) {
      const auto d = static_cast<size_t>(st.devices[k]);
      const auto& dev = w.c->devices[d];
      device_stats ds;
      ds.device = st.devices[k];
      ds.pipeline = st.pipeline;
      ds.stage = st.stage;
      ds.samples = st.samples[k];
      ds.compute_s = busy[d] / steps;
      ds.allreduce_s = ar[d] / steps;
      ds.optimizer_s = opt[d] / steps;
      ds.utilization = r.step_time_s > 0 ? ds.compute_s / r.step_time_s : 0.0;
      ds.state_bytes = st.state;
      ds.peak_activation_bytes = peak_activations(ops, st.act_b[k], st.act_w[k], st.rebuilt[k]);
      ds.peak_bytes = ds.state_bytes + ds.peak_activation_bytes;
      ds.memory_bytes = dev.memory_bytes;
      ds.out_of_memory = ds.peak_bytes > dev.usable_memory_bytes();
      r.out_of_memory = r.out_of_memory || ds.out_of_memory;
      r.peak_bytes = std::max(r.peak_bytes, ds.peak_bytes);
      ss.bubble_ratio += 1.0 - ds.utilization;
      peak_flops += dev.peak_flops(profile.options().prec);
      r.devices.push_back(ds);
    }
    ss.bubble_ratio /= static_cast<double>(st.devices.size());
    bubble_sum += ss.bubble_ratio;
    r.stages[static_cast<size_t>(st.pipeline)].push_back(ss);
  }
  r.bubble_ratio = w.stages.empty() ? 0.0 : bubble_sum / static_cast<double>(w.stages.size());
  double flops_per_sample = 0.0;
  for (const auto& l : w.model->layers)
    flops_per_sample += l.f_flops + l.b_flops + l.w_flops;
  if (peak_flops > 0 && r.step_time_s > 0)
    r.flops_utilization = flops_per_sample * r.global_batch / (peak_flops * r.step_time_s);
  for (const auto& l : w.links) {
    link_stats ls;
    ls.kind = l.kind;
    ls.from = l.from;
    ls.to = l.to;
    ls.bytes = l.bytes;
    ls.busy_s = l.busy;
    ls.utilization = total_s > 0 ? l.busy / total_s : 0.0;
    r.links.push_back(ls);
  }
}

} // namespace deepcee::runtime::sim_detail
