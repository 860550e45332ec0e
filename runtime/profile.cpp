#include "runtime/profile.hpp"
#include "runtime/errors.hpp"
#include "runtime/units_toml.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
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

namespace {

using namespace toml_input;
namespace fs = std::filesystem;

measured_entry read_entry(const fs::path& file, const toml::table& t) {
  check_keys(file, t,
             {"device", "layer", "micro_batch", "f", "b", "w", "act_until_b", "act_until_w"},
             "[[entry]]");
  auto need = [&](const char* key) -> const toml::node& {
    const toml::node* n = t.get(key);
    if (!n)
      fail_at(file, t, std::string("[[entry]] needs '") + key + "'");
    return *n;
  };
  measured_entry e;
  e.line = line_of(t);
  const toml::node& dev = need("device");
  std::string kind = get_string(file, dev, "device");
  auto spec = find_device_kind(kind);
  if (!spec)
    fail_at(file, dev, "unknown device kind '" + kind + "' (known: " + known_device_kinds() + ")");
  e.device_kind = spec->kind;
  const toml::node& layer = need("layer");
  std::string lk = get_string(file, layer, "layer");
  if (lk == "embedding")
    e.layer = layer_kind::embedding;
  else if (lk == "block")
    e.layer = layer_kind::block;
  else if (lk == "head")
    e.layer = layer_kind::head;
  else
    fail_at(file, layer, "unknown layer kind '" + lk + "' (expected embedding, block or head)");
  const toml::node& mb = need("micro_batch");
  int64_t b = get_integer(file, mb, "micro_batch");
  if (b < 1 || b > 1 << 20)
    fail_at(file, mb, "micro_batch must be positive");
  e.micro_batch = int(b);
  auto seconds = [&](const char* key) {
    const toml::node& n = need(key);
    double v = get_quantity(file, n, key, parse_duration, 1.0, "0.012 or \"12ms\"");
    if (v < 0 || !std::isfinite(v))
      fail_at(file, n, std::string(key) + " must not be negative");
    return v;
  };
  e.f_s = seconds("f");
  e.b_s = seconds("b");
  e.w_s = seconds("w");
  auto bytes = [&](const char* key) -> std::optional<int64_t> {
    const toml::node* n = t.get(key);
    if (!n)
      return std::nullopt;
    double v = get_quantity(file, *n, key, parse_bytes, 1.0, "1.2e8 or \"120MB\"");
    if (v < 0 || !std::isfinite(v))
      fail_at(file, *n, std::string(key) + " must not be negative");
    return int64_t(v);
  };
  e.act_until_b = bytes("act_until_b");
  e.act_until_w = bytes("act_until_w");
  return e;
}

} // namespace

measured_profile parse_measured_profile(std::string_view toml_text, const fs::path& source) {
  toml::table root = parse_text(toml_text, source);
  check_keys(source, root, {"model", "precision", "entry"}, "the profile file");
  measured_profile p;
  p.source = source;
  if (auto n = root.get("model")) {
    p.model = get_string(source, *n, "model");
    p.model_line = line_of(*n);
  }
  if (auto n = root.get("precision")) {
    std::string s = get_string(source, *n, "precision");
    if (s == "fp32")
      p.prec = precision::fp32;
    else if (s == "bf16")
      p.prec = precision::bf16;
    else
      fail_at(source, *n, "unknown precision '" + s + "' (expected fp32 or bf16)");
    p.precision_line = line_of(*n);
  }
  if (auto n = root.get("entry")) {
    if (!n->is_array_of_tables())
      fail_at(source, *n, "'entry' must be an array of tables ([[entry]])");
    for (const auto& item : *n->as_array()) {
      measured_entry e = read_entry(source, *item.as_table());
      for (const auto& prior : p.entries)
        if (prior.device_kind == e.device_kind && prior.layer == e.layer &&
            prior.micro_batch == e.micro_batch)
          fail_input(source, e.line,
                     "duplicate entry for " + e.device_kind + " " +
                         std::string(to_string(e.layer)) + " micro_batch " +
                         std::to_string(e.micro_batch) + " (first at line " +
                         std::to_string(prior.line) + ")");
      p.entries.push_back(std::move(e));
    }
  }
  return p;
}

measured_profile load_measured_profile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail_input(path, 0, "cannot read the profile file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_measured_profile(text.str(), path);
}

} // namespace deepcee::runtime
