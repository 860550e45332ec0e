#include "runtime/io/profile_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/units_toml.hpp"

#include <cmath>

namespace deepcee::runtime {

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
  return parse_measured_profile(read_bounded_file(path, max_config_bytes, "profile file"), path);
}

} // namespace deepcee::runtime
