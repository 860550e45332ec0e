#include "kernels/train/checkpoint.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/safetensors.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <span>

namespace deepcee::kernels {
namespace {

const std::string exp_avg = "optimizer.exp_avg.";
const std::string exp_avg_sq = "optimizer.exp_avg_sq.";
const std::string checkpoint_format = "deepcee-checkpoint-1";

runtime::named_tensor to_named(backend& be, const std::string& name, const tensor& t) {
  return runtime::named_tensor::f32(name, t.shape(), be.to_host<float>(t));
}

/// The shortest text that reads back as exactly `x`.
std::string exact_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::map<std::string, std::string> metadata(const checkpoint_info& info) {
  return {{"format", checkpoint_format},
          {"clock_s", exact_text(info.clock_s)},
          {"step", std::to_string(info.step)},
          {"seed", std::to_string(info.seed)},
          {"n_layer", std::to_string(info.model.n_layer)},
          {"d_model", std::to_string(info.model.d_model)},
          {"n_head", std::to_string(info.model.n_head)},
          {"context", std::to_string(info.model.context)},
          {"vocab", std::to_string(info.model.vocab)}};
}

/// A metadata value that must be a whole number in [min, max], written in full: "-5" for
/// a step, "12abc" or "1e3" are refused rather than read in part.
int64_t whole_number(const std::filesystem::path& path,
                     const std::map<std::string, std::string>& meta, const std::string& key,
                     int64_t min, int64_t max) {
  auto it = meta.find(key);
  if (it == meta.end())
    runtime::fail_input(path, 0, "not a deepcee checkpoint: metadata has no '" + key + "'");
  const std::string& text = it->second;
  int64_t value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec != std::errc{} || r.ptr != text.data() + text.size())
    runtime::fail_input(path, 0, "metadata '" + key + "' is not a whole number: \"" + text + "\"");
  if (value < min || value > max)
    runtime::fail_input(path, 0,
                        "metadata '" + key + "' must be in " + std::to_string(min) + ".." +
                            std::to_string(max) + ", got " + text);
  return value;
}

checkpoint_info parse_info(const std::filesystem::path& path,
                           const std::map<std::string, std::string>& meta) {
  auto format = meta.find("format");
  if (format == meta.end())
    runtime::fail_input(path, 0, "not a deepcee checkpoint: metadata has no 'format'");
  if (format->second != checkpoint_format)
    runtime::fail_input(path, 0,
                        "metadata 'format' is \"" + format->second + "\", expected \"" +
                            checkpoint_format + "\"");
  constexpr int64_t int_max = std::numeric_limits<int>::max();
  checkpoint_info info;
  info.step = static_cast<int>(whole_number(path, meta, "step", 0, int_max));
  // Seeds are written unsigned: parse the text as such, not through a signed number.
  {
    auto it = meta.find("seed");
    if (it == meta.end())
      runtime::fail_input(path, 0, "not a deepcee checkpoint: metadata has no 'seed'");
    const std::string& text = it->second;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), info.seed);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size())
      runtime::fail_input(path, 0, "metadata 'seed' is not a whole number >= 0: \"" + text + "\"");
  }
  info.model.n_layer = static_cast<int>(whole_number(path, meta, "n_layer", 1, int_max));
  info.model.d_model = static_cast<int>(whole_number(path, meta, "d_model", 1, int_max));
  info.model.n_head = static_cast<int>(whole_number(path, meta, "n_head", 1, int_max));
  info.model.context = static_cast<int>(whole_number(path, meta, "context", 1, int_max));
  info.model.vocab = static_cast<int>(whole_number(path, meta, "vocab", 256, 256));
  if (info.model.d_model % info.model.n_head != 0)
    runtime::fail_input(path, 0,
                        "metadata 'd_model' (" + std::to_string(info.model.d_model) +
                            ") is not divisible by 'n_head' (" + std::to_string(info.model.n_head) +
                            ")");
  if (auto it = meta.find("clock_s"); it != meta.end()) { // older files have none: 0
    const auto& text = it->second;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), info.clock_s);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || !std::isfinite(info.clock_s) ||
        info.clock_s < 0)
      runtime::fail_input(path, 0, "metadata 'clock_s' is not a time in seconds: " + text);
  }
  return info;
}

/// Weights and first moments must be finite and second moments finite and >= 0: one NaN
/// would spread through every later step and into every checkpoint after it.
void require_finite(const std::filesystem::path& path, const std::string& name,
                    std::span<const float> values, bool second_moment) {
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (!std::isfinite(v) || (second_moment && v < 0.0f))
      runtime::fail_input(path, 0,
                          "tensor '" + name + "' holds " + std::to_string(v) + " at index " +
                              std::to_string(i) +
                              (second_moment ? " (a second moment must be finite and >= 0)"
                                             : " (values must be finite)"));
  }
}

void require_finite(const std::filesystem::path& path, const runtime::named_tensor& t) {
  if (t.dtype != "F32")
    return;
  const std::vector<float> values = t.to_f32();
  require_finite(path, t.name, values, t.name.rfind(exp_avg_sq, 0) == 0);
}

std::string shape_mismatch(const std::string& name, const std::string& dtype,
                           const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  return "tensor '" + name + "' is " + dtype + " " + shape_string(got) + ", the model needs F32 " +
         shape_string(want);
}

} // namespace

void save_checkpoint(const std::filesystem::path& path, const std::vector<parameter_state>& params,
                     const checkpoint_info& info) {
  std::vector<runtime::named_tensor> tensors;
  for (const auto& p : params)
    tensors.push_back(runtime::named_tensor::f32(p.name, p.shape, p.value));
  for (const auto& p : params) {
    tensors.push_back(runtime::named_tensor::f32(exp_avg + p.name, p.shape, p.exp_avg));
    tensors.push_back(runtime::named_tensor::f32(exp_avg_sq + p.name, p.shape, p.exp_avg_sq));
  }
  runtime::write_safetensors(path, tensors, metadata(info));
}

checkpoint_contents read_checkpoint(const std::filesystem::path& path) {
  runtime::safetensors_file file = runtime::read_safetensors(path);
  checkpoint_contents out;
  out.info = parse_info(path, file.metadata);
  const std::string optimizer = "optimizer.";
  for (const auto& t : file.tensors) {
    if (t.name.rfind(optimizer, 0) == 0) {
      const bool first = t.name.rfind(exp_avg, 0) == 0;
      const std::string owner = t.name.substr((first ? exp_avg : exp_avg_sq).size());
      if ((!first && t.name.rfind(exp_avg_sq, 0) != 0) || file.find(owner) == nullptr)
        runtime::fail_input(path, 0, "tensor '" + t.name + "' is not the moment of a parameter");
      continue;
    }
    if (t.dtype != "F32")
      runtime::fail_input(path, 0, "tensor '" + t.name + "' is " + t.dtype + ", expected F32");
    parameter_state p{t.name, t.shape, t.to_f32(), {}, {}};
    require_finite(path, t.name, p.value, false);
    const auto* m = file.find(exp_avg + t.name);
    const auto* v = file.find(exp_avg_sq + t.name);
    if ((m == nullptr) != (v == nullptr))
      runtime::fail_input(path, 0, "tensor '" + t.name + "' has only one of its AdamW moments");
    if (m != nullptr) {
      for (const auto* moment : {m, v})
        if (moment->dtype != "F32" || moment->shape != t.shape)
          runtime::fail_input(path, 0,
                              shape_mismatch(moment->name, moment->dtype, moment->shape, t.shape));
      p.exp_avg = m->to_f32();
      p.exp_avg_sq = v->to_f32();
      require_finite(path, m->name, p.exp_avg, false);
      require_finite(path, v->name, p.exp_avg_sq, true);
    }
    out.params.push_back(std::move(p));
  }
  return out;
}

void require_same_model(const std::filesystem::path& path, const checkpoint_info& info,
                        const runtime::model_config& m) {
  const auto& c = info.model;
  if (c.n_layer != m.n_layer || c.d_model != m.d_model || c.n_head != m.n_head ||
      c.context != m.context || c.vocab != m.vocab)
    runtime::fail_input(path, 0,
                        "checkpoint model sizes differ from the config's (checkpoint: n_layer " +
                            std::to_string(c.n_layer) + ", d_model " + std::to_string(c.d_model) +
                            ", n_head " + std::to_string(c.n_head) + ", context " +
                            std::to_string(c.context) + "; config: n_layer " +
                            std::to_string(m.n_layer) + ", d_model " + std::to_string(m.d_model) +
                            ", n_head " + std::to_string(m.n_head) + ", context " +
                            std::to_string(m.context) + ")");
}

void load_parameter_states(const std::vector<parameter_state>& states, backend& be,
                           gpt_model& model, adamw* optimizer,
                           const std::filesystem::path& source) {
  std::map<std::string, const parameter_state*> by_name;
  for (const auto& s : states)
    by_name[s.name] = &s;
  std::vector<std::pair<const std::vector<float>*, tensor*>> copies;
  auto match = [&](parameter& p, tensor* m, tensor* v) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      runtime::fail_input(source, 0, "checkpoint has no tensor '" + p.name + "'");
    const parameter_state& s = *it->second;
    if (s.shape != p.value.shape())
      runtime::fail_input(source, 0, shape_mismatch(s.name, "F32", s.shape, p.value.shape()));
    const auto n = static_cast<size_t>(p.value.numel());
    if (s.value.size() != n)
      runtime::fail_input(source, 0,
                          "tensor '" + s.name + "' holds " + std::to_string(s.value.size()) +
                              " values for shape " + shape_string(s.shape));
    copies.emplace_back(&s.value, &p.value);
    if (m == nullptr)
      return;
    if (s.exp_avg.empty())
      runtime::fail_input(source, 0, "checkpoint has no tensor '" + exp_avg + p.name + "'");
    if (s.exp_avg.size() != n || s.exp_avg_sq.size() != n)
      runtime::fail_input(source, 0, "the AdamW moments of '" + s.name + "' do not fit its shape");
    copies.emplace_back(&s.exp_avg, m);
    copies.emplace_back(&s.exp_avg_sq, v);
  };
  if (optimizer != nullptr) {
    const auto& params = optimizer->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      match(*params[i], &optimizer->first_moments()[i], &optimizer->second_moments()[i]);
  } else {
    for (parameter* p : model.parameters())
      match(*p, nullptr, nullptr);
  }
  for (auto& [src, dst] : copies)
    be.upload(*dst, src->data(), src->size() * sizeof(float));
}

void save_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                     adamw* optimizer, const checkpoint_info& info) {
  std::vector<runtime::named_tensor> tensors;
  for (parameter* p : model.parameters())
    tensors.push_back(to_named(be, p->name, p->value));
  if (optimizer != nullptr) {
    const auto& params = optimizer->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      tensors.push_back(to_named(be, exp_avg + params[i]->name, optimizer->first_moments()[i]));
      tensors.push_back(to_named(be, exp_avg_sq + params[i]->name, optimizer->second_moments()[i]));
    }
  }
  runtime::write_safetensors(path, tensors, metadata(info));
}

checkpoint_info read_checkpoint_info(const std::filesystem::path& path) {
  return parse_info(path, runtime::read_safetensors(path).metadata);
}

checkpoint_info load_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                                adamw* optimizer) {
  runtime::safetensors_file file = runtime::read_safetensors(path);
  checkpoint_info info = parse_info(path, file.metadata);

  // Match every destination first, so that a bad file changes nothing.
  std::vector<std::pair<const runtime::named_tensor*, tensor*>> copies;
  auto match = [&](const std::string& name, tensor& dst) {
    const runtime::named_tensor* src = file.find(name);
    if (src == nullptr)
      runtime::fail_input(path, 0, "checkpoint has no tensor '" + name + "'");
    if (src->dtype != "F32" || src->shape != dst.shape())
      runtime::fail_input(path, 0,
                          "tensor '" + name + "' is " + src->dtype + " " +
                              shape_string(src->shape) + ", the model needs F32 " +
                              shape_string(dst.shape()));
    require_finite(path, *src);
    copies.emplace_back(src, &dst);
  };
  for (parameter* p : model.parameters())
    match(p->name, p->value);
  if (optimizer != nullptr) {
    const auto& params = optimizer->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      match(exp_avg + params[i]->name, optimizer->first_moments()[i]);
      match(exp_avg_sq + params[i]->name, optimizer->second_moments()[i]);
    }
  }
  for (auto& [src, dst] : copies)
    be.upload(*dst, src->data.data(), src->data.size());
  return info;
}

} // namespace deepcee::kernels
