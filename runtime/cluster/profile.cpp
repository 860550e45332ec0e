#include "runtime/cluster/profile.hpp"
#include "runtime/base/errors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace deepcee::runtime {

const roofline_factors& estimate_options::factors(device_class c) const {
  switch (c) {
  case device_class::datacenter_gpu:
    return datacenter;
  case device_class::consumer_gpu:
    return consumer;
  case device_class::embedded_gpu:
    return embedded;
  case device_class::cpu:
    return cpu;
  }
  return datacenter;
}

layer_cost estimate_cost(const device_spec& dev, const layer_spec& layer, int micro_batch,
                         const estimate_options& options) {
  const roofline_factors& f = options.factors(dev.cls);
  const layer_work work = work_at(layer, micro_batch);
  const double tokens = double(micro_batch) * double(layer.tokens);
  const double width = double(layer.width);
  const double size = tokens / (tokens + f.tokens_half) * width / (width + f.width_half);
  const double rate = dev.peak_flops(options.prec) * f.matmul_efficiency * size;
  auto op = [&](double flops, double bytes, int kernels) {
    if (flops == 0 && bytes == 0)
      return 0.0;
    return std::max(flops / rate, bytes / dev.mem_bandwidth_Bps) + kernels * f.launch_s;
  };
  layer_cost c;
  c.f_s = op(work.f_flops, work.f_bytes, layer.kernels_f);
  c.b_s = op(work.b_flops, work.b_bytes, layer.kernels_b);
  c.w_s = op(work.w_flops, work.w_bytes, layer.kernels_w);
  c.act_until_b = work.act_until_b;
  c.act_until_w = work.act_until_w;
  c.state_bytes = layer.state_bytes();
  return c;
}

device_spec figures_of(const device& dev) {
  device_spec s;
  s.kind = dev.kind;
  s.description = dev.name;
  s.cls = dev.cls;
  s.fp32_flops = dev.fp32_flops;
  s.bf16_flops = dev.bf16_flops;
  s.memory_bytes = dev.memory_bytes;
  s.mem_bandwidth_Bps = dev.mem_bandwidth_Bps;
  return s;
}

void require_profile_covers(const measured_profile& profile, const std::vector<device>& devices) {
  if (profile.format_version == 0 || devices.empty())
    return;
  std::string measured, wanted;
  for (const auto& d : profile.devices) {
    for (const auto& dev : devices)
      if (dev.kind == d.kind)
        return;
    measured += (measured.empty() ? "" : ", ") + d.kind;
  }
  for (const auto& dev : devices)
    if (wanted.find(dev.kind) == std::string::npos)
      wanted += (wanted.empty() ? "" : ", ") + dev.kind;
  fail_input(profile.source, profile.devices.empty() ? 0 : profile.devices.front().line,
             "the profile was measured on " + measured + ", not on any device of the cluster (" +
                 wanted + ")");
}

void apply_measured_links(cluster& c, const measured_profile& profile) {
  for (const auto& l : profile.links) {
    const auto from = c.find_node(l.from), to = c.find_node(l.to);
    if (!from || !to)
      fail_input(profile.source, l.line,
                 "the link from " + l.from + " to " + l.to + " names a node that cluster '" +
                     c.name + "' does not have");
    link_override o;
    o.from = {link_endpoint::scope::node, *from};
    o.to = {link_endpoint::scope::node, *to};
    o.directed = true;
    o.latency_s = l.latency_s;
    o.bandwidth_Bps = l.bandwidth_Bps;
    o.line = l.line;
    c.overrides.push_back(o);
  }
}

profile_table::profile_table(model_spec model, estimate_options options, measured_profile measured)
    : model_(std::move(model)), options_(options), measured_(std::move(measured)) {
  if (!measured_.model.empty() && !model_.name.empty() && measured_.model != model_.name)
    fail_input(measured_.source, measured_.model_line,
               "the profile was measured for model '" + measured_.model + "', not '" + model_.name +
                   "'");
  if (measured_.prec && *measured_.prec != options_.prec)
    fail_input(measured_.source, measured_.precision_line,
               "the profile was measured in " + std::string(to_string(*measured_.prec)) +
                   ", but the plan uses " + std::string(to_string(options_.prec)));
}

const measured_codec* profile_table::codec(std::string_view kind, compression comp) const {
  for (const auto& c : measured_.codecs)
    if (c.device_kind == kind && c.comp == comp)
      return &c;
  return nullptr;
}

double profile_table::optimizer_s(const device& dev, int first, int last) const {
  double total = 0;
  for (int l = first; l < last; ++l) {
    const layer_spec& spec = model_.layers.at(size_t(l));
    const auto measured = std::find_if(measured_.optimizers.begin(), measured_.optimizers.end(),
                                       [&](const measured_optimizer& o) {
                                         return o.device_kind == dev.kind && o.layer == spec.kind;
                                       });
    if (measured != measured_.optimizers.end())
      total += measured->step_s;
    else if (dev.mem_bandwidth_Bps > 0)
      total += double(spec.state_bytes() + spec.param_bytes + spec.optimizer_bytes) /
               dev.mem_bandwidth_Bps;
  }
  return total;
}

layer_cost profile_table::cost(std::string_view kind, int layer, int micro_batch) const {
  auto spec = find_device_kind(kind);
  if (!spec)
    throw std::invalid_argument("unknown device kind '" + std::string(kind) + "'");
  return cost_with(*spec, layer, micro_batch);
}

layer_cost profile_table::cost(const device& dev, int layer, int micro_batch) const {
  return cost_with(figures_of(dev), layer, micro_batch);
}

layer_cost profile_table::cost_with(const device_spec& figures, int layer, int micro_batch) const {
  if (layer < 0 || layer >= int(model_.layers.size()))
    throw std::out_of_range("layer " + std::to_string(layer) + " outside 0.." +
                            std::to_string(model_.layers.size() - 1));
  if (micro_batch < 1)
    throw std::invalid_argument("micro-batch size must be positive");
  const layer_spec& spec = model_.layers[size_t(layer)];
  layer_cost est = estimate_cost(figures, spec, micro_batch, options_);

  const measured_entry* nearest = nullptr;
  for (const auto& e : measured_.entries) {
    if (e.device_kind != figures.kind || e.layer != spec.kind)
      continue;
    int d = std::abs(e.micro_batch - micro_batch);
    int best = nearest ? std::abs(nearest->micro_batch - micro_batch) : 0;
    if (!nearest || d < best || (d == best && e.micro_batch < nearest->micro_batch))
      nearest = &e;
  }
  if (!nearest)
    return est;
  layer_cost out = est;
  out.measured = true;
  if (nearest->micro_batch == micro_batch) {
    out.f_s = nearest->f_s;
    out.b_s = nearest->b_s;
    out.w_s = nearest->w_s;
    out.act_until_b = nearest->act_until_b.value_or(est.act_until_b);
    out.act_until_w = nearest->act_until_w.value_or(est.act_until_w);
    return out;
  }
  // Calibrate: the same ratio to the roofline as at the nearest measured size.
  layer_cost at = estimate_cost(figures, spec, nearest->micro_batch, options_);
  auto scale = [](double measured, double estimated_there, double estimated_here) {
    return estimated_there > 0 ? estimated_here * measured / estimated_there : estimated_here;
  };
  out.f_s = scale(nearest->f_s, at.f_s, est.f_s);
  out.b_s = scale(nearest->b_s, at.b_s, est.b_s);
  out.w_s = scale(nearest->w_s, at.w_s, est.w_s);
  if (nearest->act_until_b)
    out.act_until_b = int64_t(
        scale(double(*nearest->act_until_b), double(at.act_until_b), double(est.act_until_b)));
  if (nearest->act_until_w)
    out.act_until_w = int64_t(
        scale(double(*nearest->act_until_w), double(at.act_until_w), double(est.act_until_w)));
  return out;
}

} // namespace deepcee::runtime
