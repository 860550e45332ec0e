#include "runtime/io/profile_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/units_toml.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace deepcee::runtime {

namespace {

using namespace toml_input;
namespace fs = std::filesystem;

layer_kind read_layer_kind(const fs::path& file, const toml::node& layer) {
  const std::string name = get_string(file, layer, "layer");
  for (layer_kind k : {layer_kind::embedding, layer_kind::block, layer_kind::head})
    if (name == to_string(k))
      return k;
  fail_at(file, layer, "unknown layer kind '" + name + "' (expected embedding, block or head)");
}

/// A catalogue kind named at `dev` (its canonical spelling).
std::string read_device_kind(const fs::path& file, const toml::node& dev) {
  const std::string kind = get_string(file, dev, "device");
  const auto spec = find_device_kind(kind);
  if (!spec)
    fail_at(file, dev, "unknown device kind '" + kind + "' (known: " + known_device_kinds() + ")");
  return spec->kind;
}

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
  e.device_kind = read_device_kind(file, need("device"));
  e.layer = read_layer_kind(file, need("layer"));
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

measured_device read_device(const fs::path& file, const toml::table& t) {
  check_keys(file, t, {"kind", "identity", "micro_batches"}, "[[device]]");
  measured_device d;
  d.line = line_of(t);
  for (const char* key : {"kind", "identity", "micro_batches"})
    if (!t.get(key))
      fail_at(file, t, std::string("[[device]] needs '") + key + "'");
  const toml::node& kind = *t.get("kind");
  auto spec = find_device_kind(get_string(file, kind, "kind"));
  if (!spec)
    fail_at(file, kind, "unknown device kind '" + get_string(file, kind, "kind") + "'");
  d.kind = spec->kind;
  d.identity = get_string(file, *t.get("identity"), "identity");
  const toml::node& mbs = *t.get("micro_batches");
  if (!mbs.is_array() || mbs.as_array()->empty())
    fail_at(file, mbs, "micro_batches must be a list of sizes");
  for (const auto& v : *mbs.as_array()) {
    int64_t b = get_integer(file, v, "micro_batches");
    if (b < 1 || b > 1 << 20)
      fail_at(file, v, "micro_batches must be positive");
    d.micro_batches.push_back(int(b));
  }
  return d;
}

measured_link read_link(const fs::path& file, const toml::table& t) {
  check_keys(file, t, {"from", "to", "latency", "bandwidth"}, "[[link]]");
  measured_link l;
  l.line = line_of(t);
  for (const char* key : {"from", "to", "latency", "bandwidth"})
    if (!t.get(key))
      fail_at(file, t, std::string("[[link]] needs '") + key + "'");
  l.from = get_string(file, *t.get("from"), "from");
  l.to = get_string(file, *t.get("to"), "to");
  l.latency_s =
      get_quantity(file, *t.get("latency"), "latency", parse_duration, 1.0, "1e-4 or \"0.1ms\"");
  l.bandwidth_Bps = get_quantity(file, *t.get("bandwidth"), "bandwidth", parse_bandwidth, 1.0,
                                 "1.2e9 (bytes/s) or \"10Gbps\"");
  if (!(l.latency_s >= 0) || !(l.bandwidth_Bps > 0) || !std::isfinite(l.bandwidth_Bps))
    fail_at(file, t, "a link needs latency >= 0 and bandwidth > 0");
  return l;
}

measured_codec read_codec(const fs::path& file, const toml::table& t) {
  check_keys(file, t, {"device", "compression", "encode", "decode"}, "[[codec]]");
  measured_codec c;
  c.line = line_of(t);
  for (const char* key : {"device", "compression", "encode", "decode"})
    if (!t.get(key))
      fail_at(file, t, std::string("[[codec]] needs '") + key + "'");
  c.device_kind = read_device_kind(file, *t.get("device"));
  const toml::node& comp = *t.get("compression");
  const std::string name = get_string(file, comp, "compression");
  const auto parsed = parse_compression(name);
  if (!parsed || *parsed == compression::none)
    fail_at(file, comp, "unknown compression '" + name + "' (expected fp16, bf16 or int8)");
  c.comp = *parsed;
  auto per_byte = [&](const char* key) {
    const toml::node& n = *t.get(key);
    const double v = get_quantity(file, n, key, parse_duration, 1.0, "1.1e-10 (seconds per byte)");
    if (!(v >= 0) || !std::isfinite(v))
      fail_at(file, n, std::string(key) + " must be seconds per byte, not negative");
    return v;
  };
  c.encode_s_per_byte = per_byte("encode");
  c.decode_s_per_byte = per_byte("decode");
  return c;
}

measured_optimizer read_optimizer(const fs::path& file, const toml::table& t) {
  check_keys(file, t, {"device", "layer", "step"}, "[[optimizer]]");
  measured_optimizer o;
  o.line = line_of(t);
  for (const char* key : {"device", "layer", "step"})
    if (!t.get(key))
      fail_at(file, t, std::string("[[optimizer]] needs '") + key + "'");
  o.device_kind = read_device_kind(file, *t.get("device"));
  o.layer = read_layer_kind(file, *t.get("layer"));
  const toml::node& step = *t.get("step");
  o.step_s = get_quantity(file, step, "step", parse_duration, 1.0, "0.0021 or \"2.1ms\"");
  if (!(o.step_s >= 0) || !std::isfinite(o.step_s))
    fail_at(file, step, "step must be seconds, not negative");
  return o;
}

/// A versioned file's header: the counts it declares, so that truncation is caught (a file
/// written before codecs or optimizer steps were measured declares none and has none).
struct declared_counts {
  int64_t entries = 0, links = 0, codecs = 0, optimizers = 0;
};

/// The keys a versioned file must have, and its format version.
declared_counts read_version_header(const fs::path& source, const toml::table& root,
                                    measured_profile& p) {
  const toml::node* v = root.get("format_version");
  p.format_version = int(get_integer(source, *v, "format_version"));
  if (p.format_version != profile_format_version)
    fail_at(source, *v,
            "format_version " + std::to_string(p.format_version) +
                " is not the one this build "
                "reads (" +
                std::to_string(profile_format_version) + "): measure again with deepcee profile");
  for (const char* key : {"model", "precision", "fingerprint", "entries", "links", "device"})
    if (!root.get(key))
      fail_input(source, 0, std::string("missing '") + key + "' (a versioned profile names it)");
  p.fingerprint = get_string(source, *root.get("fingerprint"), "fingerprint");
  declared_counts n;
  n.entries = get_integer(source, *root.get("entries"), "entries");
  n.links = get_integer(source, *root.get("links"), "links");
  if (const auto* codecs = root.get("codecs"))
    n.codecs = get_integer(source, *codecs, "codecs");
  if (const auto* optimizers = root.get("optimizers"))
    n.optimizers = get_integer(source, *optimizers, "optimizers");
  return n;
}

/// Every [[entry]] and [[link]] the header declares, and every layer kind at every
/// micro-batch size of each [[device]].
void check_complete(const fs::path& source, const measured_profile& p, const declared_counts& n) {
  if (int64_t(p.entries.size()) != n.entries)
    fail_input(source, 0,
               "truncated or edited: " + std::to_string(p.entries.size()) + " [[entry]] of the " +
                   std::to_string(n.entries) + " it declares");
  if (int64_t(p.links.size()) != n.links)
    fail_input(source, 0,
               "truncated or edited: " + std::to_string(p.links.size()) + " [[link]] of the " +
                   std::to_string(n.links) + " it declares");
  if (int64_t(p.codecs.size()) != n.codecs)
    fail_input(source, 0,
               "truncated or edited: " + std::to_string(p.codecs.size()) + " [[codec]] of the " +
                   std::to_string(n.codecs) + " it declares");
  if (int64_t(p.optimizers.size()) != n.optimizers)
    fail_input(source, 0,
               "truncated or edited: " + std::to_string(p.optimizers.size()) +
                   " [[optimizer]] of the " + std::to_string(n.optimizers) + " it declares");
  const auto named = [&](const std::string& kind) {
    return std::any_of(p.devices.begin(), p.devices.end(),
                       [&](const measured_device& d) { return d.kind == kind; });
  };
  for (const auto& e : p.entries)
    if (!named(e.device_kind))
      fail_input(source, e.line,
                 "an entry for device " + e.device_kind + ", which no [[device]] names");
  for (const auto& c : p.codecs)
    if (!named(c.device_kind))
      fail_input(source, c.line,
                 "a codec for device " + c.device_kind + ", which no [[device]] names");
  for (const auto& o : p.optimizers)
    if (!named(o.device_kind))
      fail_input(source, o.line,
                 "an optimizer step for device " + o.device_kind + ", which no [[device]] names");
  for (const auto& d : p.devices)
    for (layer_kind k : {layer_kind::embedding, layer_kind::block, layer_kind::head}) {
      if (!p.optimizers.empty() &&
          std::none_of(p.optimizers.begin(), p.optimizers.end(), [&](const measured_optimizer& o) {
            return o.device_kind == d.kind && o.layer == k;
          }))
        fail_input(source, d.line,
                   "missing the optimizer step for device " + d.kind + ", layer " +
                       std::string(to_string(k)));
      for (int b : d.micro_batches)
        if (std::none_of(p.entries.begin(), p.entries.end(), [&](const measured_entry& e) {
              return e.device_kind == d.kind && e.layer == k && e.micro_batch == b;
            }))
          fail_input(source, d.line,
                     "missing the entry for device " + d.kind + ", layer " +
                         std::string(to_string(k)) + ", micro_batch " + std::to_string(b));
    }
}

/// Reads every table of the array `[[key]]` with `read`; `clash(prior, next)` names why
/// `next` may not follow an earlier table (empty when it may).
template <class T, class Read, class Clash>
std::vector<T> read_tables(const fs::path& source, const toml::table& root, const char* key,
                           Read read, Clash clash) {
  std::vector<T> out;
  const toml::node* n = root.get(key);
  if (!n)
    return out;
  if (!n->is_array_of_tables())
    fail_at(source, *n, std::string("'") + key + "' must be an array of tables ([[" + key + "]])");
  for (const auto& item : *n->as_array()) {
    T next = read(source, *item.as_table());
    for (const auto& prior : out)
      if (const std::string why = clash(prior, next); !why.empty())
        fail_input(source, next.line, why);
    out.push_back(std::move(next));
  }
  return out;
}

/// " (first at line 12)".
std::string first_at(int64_t line) {
  return " (first at line " + std::to_string(line) + ")";
}

/// `model` and `precision`, which a profile of any version may give.
void read_model_and_precision(const fs::path& source, const toml::table& root,
                              measured_profile& p) {
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
}

void read_profile_tables(const fs::path& source, const toml::table& root, measured_profile& p) {
  p.devices = read_tables<measured_device>(
      source, root, "device", read_device, [](const auto& prior, const auto& d) {
        return prior.kind == d.kind ? "a second [[device]] of kind " + d.kind : std::string();
      });
  p.entries = read_tables<measured_entry>(
      source, root, "entry", read_entry, [](const auto& prior, const auto& e) {
        if (prior.device_kind != e.device_kind || prior.layer != e.layer ||
            prior.micro_batch != e.micro_batch)
          return std::string();
        return "duplicate entry for " + e.device_kind + " " + std::string(to_string(e.layer)) +
               " micro_batch " + std::to_string(e.micro_batch) + first_at(prior.line);
      });
  p.links = read_tables<measured_link>(
      source, root, "link", read_link, [](const auto& prior, const auto& l) {
        return prior.from == l.from && prior.to == l.to
                   ? "a second [[link]] from " + l.from + " to " + l.to
                   : std::string();
      });
  p.codecs = read_tables<measured_codec>(
      source, root, "codec", read_codec, [](const auto& prior, const auto& c) {
        return prior.device_kind == c.device_kind && prior.comp == c.comp
                   ? "a second [[codec]] for " + c.device_kind + " " +
                         std::string(to_string(c.comp)) + first_at(prior.line)
                   : std::string();
      });
  p.optimizers = read_tables<measured_optimizer>(
      source, root, "optimizer", read_optimizer, [](const auto& prior, const auto& o) {
        return prior.device_kind == o.device_kind && prior.layer == o.layer
                   ? "a second [[optimizer]] for " + o.device_kind + " " +
                         std::string(to_string(o.layer)) + first_at(prior.line)
                   : std::string();
      });
}

} // namespace

measured_profile parse_measured_profile(std::string_view toml_text, const fs::path& source) {
  toml::table root = parse_text(toml_text, source);
  check_keys(source, root,
             {"format_version", "model", "precision", "fingerprint", "entries", "links", "codecs",
              "optimizers", "device", "entry", "link", "codec", "optimizer"},
             "the profile file");
  measured_profile p;
  p.source = source;
  declared_counts declared;
  if (root.get("format_version"))
    declared = read_version_header(source, root, p);
  else
    for (const char* key :
         {"fingerprint", "entries", "links", "codecs", "optimizers", "device", "link"})
      if (const auto* n = root.get(key))
        fail_at(source, *n,
                std::string("'") + key + "' belongs to a versioned profile: add format_version = " +
                    std::to_string(profile_format_version));
  read_model_and_precision(source, root, p);
  read_profile_tables(source, root, p);
  if (p.format_version)
    check_complete(source, p, declared);
  return p;
}

namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v); // the reader takes integers and floats alike
  return buf;
}

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"";
}

} // namespace

std::string format_measured_profile(const measured_profile& p) {
  std::string s;
  s += "# Written by deepcee profile: see docs/profiling.md. Seconds, bytes, bytes/s; "
       "codecs: seconds per fp32 byte; optimizer: one layer's step.\n";
  s += "format_version = " + std::to_string(profile_format_version) + "\n";
  s += "model = " + toml_string(p.model) + "\n";
  s += "precision = " + toml_string(to_string(p.prec.value_or(precision::fp32))) + "\n";
  s += "fingerprint = " + toml_string(p.fingerprint) + "\n";
  s += "entries = " + std::to_string(p.entries.size()) + "\n";
  s += "links = " + std::to_string(p.links.size()) + "\n";
  s += "codecs = " + std::to_string(p.codecs.size()) + "\n";
  s += "optimizers = " + std::to_string(p.optimizers.size()) + "\n";
  for (const auto& d : p.devices) {
    s += "\n[[device]]\nkind = " + toml_string(d.kind) + "\nidentity = " + toml_string(d.identity) +
         "\nmicro_batches = [";
    for (size_t i = 0; i < d.micro_batches.size(); ++i)
      s += (i ? ", " : "") + std::to_string(d.micro_batches[i]);
    s += "]\n";
  }
  for (const auto& e : p.entries) {
    s += "\n[[entry]]\ndevice = " + toml_string(e.device_kind) +
         "\nlayer = " + toml_string(to_string(e.layer)) +
         "\nmicro_batch = " + std::to_string(e.micro_batch) + "\nf = " + number(e.f_s) +
         "\nb = " + number(e.b_s) + "\nw = " + number(e.w_s) + "\n";
    if (e.act_until_b)
      s += "act_until_b = " + std::to_string(*e.act_until_b) + "\n";
    if (e.act_until_w)
      s += "act_until_w = " + std::to_string(*e.act_until_w) + "\n";
  }
  for (const auto& c : p.codecs)
    s += "\n[[codec]]\ndevice = " + toml_string(c.device_kind) +
         "\ncompression = " + toml_string(to_string(c.comp)) +
         "\nencode = " + number(c.encode_s_per_byte) + "\ndecode = " + number(c.decode_s_per_byte) +
         "\n";
  for (const auto& o : p.optimizers)
    s += "\n[[optimizer]]\ndevice = " + toml_string(o.device_kind) +
         "\nlayer = " + toml_string(to_string(o.layer)) + "\nstep = " + number(o.step_s) + "\n";
  for (const auto& l : p.links)
    s += "\n[[link]]\nfrom = " + toml_string(l.from) + "\nto = " + toml_string(l.to) +
         "\nlatency = " + number(l.latency_s) + "\nbandwidth = " + number(l.bandwidth_Bps) + "\n";
  return s;
}

void save_measured_profile(const measured_profile& profile, const fs::path& path) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << format_measured_profile(profile);
    if (!out.flush())
      throw std::runtime_error("cannot write " + partial.string());
  }
  fs::rename(partial, path); // a reader never sees half a file
}

measured_profile load_measured_profile(const fs::path& path) {
  return parse_measured_profile(read_bounded_file(path, max_config_bytes, "profile file"), path);
}

} // namespace deepcee::runtime
