#include "runtime/io/train_config_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/train_config_table.hpp"

#include <toml++/toml.h>

#include <climits>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace deepcee::runtime {

namespace fs = std::filesystem;

namespace {

std::string key_name(std::string_view key) {
  return "'" + std::string(key) + "'";
}

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

/// A range rule over the parsed struct. It names the keys it is about, so that loading can
/// point at the line of the first of them that the file sets. `validate` runs the same
/// rules without lines, so a command-line override is checked exactly like the file.
struct rule {
  std::vector<std::string_view> keys;
  std::function<std::string(const train_config&)> check; ///< "" when the value is fine
};

std::string at_least(std::string_view key, int64_t value, int64_t min) {
  return value >= min ? std::string()
                      : key_name(key) + " must be >= " + std::to_string(min) + ", got " +
                            std::to_string(value);
}

std::string at_most(std::string_view key, int64_t value, int64_t max) {
  return value <= max ? std::string()
                      : key_name(key) + " must be <= " + std::to_string(max) + ", got " +
                            std::to_string(value);
}

std::string unit_interval(std::string_view key, double value, bool open_low, bool open_high) {
  const bool low_ok = open_low ? value > 0.0 : value >= 0.0;
  const bool high_ok = open_high ? value < 1.0 : value <= 1.0;
  if (low_ok && high_ok)
    return {};
  return key_name(key) + " must be in " + (open_low ? "(0" : "[0") + ", 1" +
         (open_high ? ")" : "]") + ", got " + number(value);
}

const std::vector<rule>& rules() {
  using c = const train_config&;
  static const std::vector<rule> all = {
      {{"batch"}, [](c x) { return at_least("batch", x.batch, 1); }},
      {{"batch"}, [](c x) { return at_most("batch", x.batch, max_batch); }},
      {{"steps"}, [](c x) { return at_least("steps", x.steps, 0); }},
      {{"device"},
       [](c x) {
         return x.device == "cpu" || x.device == "cuda"
                    ? std::string()
                    : "'device' must be \"cpu\" or \"cuda\", got \"" + x.device + "\"";
       }},
      {{"threads"}, [](c x) { return at_least("threads", x.threads, 0); }},
      {{"eval_every"}, [](c x) { return at_least("eval_every", x.eval_every, 0); }},
      {{"eval_batches"}, [](c x) { return at_least("eval_batches", x.eval_batches, 1); }},
      {{"eval_batches"},
       [](c x) { return at_most("eval_batches", x.eval_batches, max_eval_batches); }},
      {{"checkpoint_every"},
       [](c x) { return at_least("checkpoint_every", x.checkpoint_every, 0); }},
      {{"out"}, [](c x) { return x.out.empty() ? "'out' must not be empty" : std::string(); }},
      {{"metrics_format"},
       [](c x) {
         return x.metrics_format == "csv" || x.metrics_format == "jsonl"
                    ? std::string()
                    : "'metrics_format' must be \"csv\" or \"jsonl\", got \"" + x.metrics_format +
                          "\"";
       }},
      {{"model.n_layer"}, [](c x) { return at_least("model.n_layer", x.model.n_layer, 1); }},
      {{"model.d_model"}, [](c x) { return at_least("model.d_model", x.model.d_model, 1); }},
      {{"model.n_head"}, [](c x) { return at_least("model.n_head", x.model.n_head, 1); }},
      {{"model.d_model", "model.n_head"},
       [](c x) {
         return x.model.d_model % x.model.n_head == 0
                    ? std::string()
                    : "'model.d_model' (" + std::to_string(x.model.d_model) +
                          ") must be divisible by 'model.n_head' (" +
                          std::to_string(x.model.n_head) + ")";
       }},
      {{"model.context"}, [](c x) { return at_least("model.context", x.model.context, 1); }},
      {{"model.vocab"},
       [](c x) {
         return x.model.vocab == 256 ? std::string()
                                     : "'model.vocab' must be 256 (byte tokens), got " +
                                           std::to_string(x.model.vocab);
       }},
      {{"optimizer.lr"},
       [](c x) {
         return x.optimizer.lr > 0.0 && std::isfinite(x.optimizer.lr)
                    ? std::string()
                    : "'optimizer.lr' must be > 0, got " + number(x.optimizer.lr);
       }},
      {{"optimizer.min_lr_ratio"},
       [](c x) {
         return unit_interval("optimizer.min_lr_ratio", x.optimizer.min_lr_ratio, false, false);
       }},
      {{"optimizer.warmup_steps"},
       [](c x) { return at_least("optimizer.warmup_steps", x.optimizer.warmup_steps, 0); }},
      {{"optimizer.beta1"},
       [](c x) { return unit_interval("optimizer.beta1", x.optimizer.beta1, false, true); }},
      {{"optimizer.beta2"},
       [](c x) { return unit_interval("optimizer.beta2", x.optimizer.beta2, false, true); }},
      {{"optimizer.eps"},
       [](c x) {
         return x.optimizer.eps > 0.0 && std::isfinite(x.optimizer.eps)
                    ? std::string()
                    : "'optimizer.eps' must be > 0, got " + number(x.optimizer.eps);
       }},
      {{"optimizer.weight_decay"},
       [](c x) {
         return x.optimizer.weight_decay >= 0.0 && std::isfinite(x.optimizer.weight_decay)
                    ? std::string()
                    : "'optimizer.weight_decay' must be >= 0, got " +
                          number(x.optimizer.weight_decay);
       }},
      {{"optimizer.grad_clip"},
       [](c x) {
         return x.optimizer.grad_clip >= 0.0 && std::isfinite(x.optimizer.grad_clip)
                    ? std::string()
                    : "'optimizer.grad_clip' must be >= 0 (0 disables), got " +
                          number(x.optimizer.grad_clip);
       }},
      {{"data.path"},
       [](c x) { return x.data.path.empty() ? "'data.path' must not be empty" : std::string(); }},
      {{"data.val_fraction"},
       [](c x) { return unit_interval("data.val_fraction", x.data.val_fraction, true, true); }},
  };
  return all;
}

/// Reads the values of one parsed document into a train_config, failing at the line of
/// the offending node.
class reader {
public:
  explicit reader(const fs::path& source) : source_(source) {}

  [[noreturn]] void fail(const toml::source_region& where, const std::string& what) const {
    fail_input(source_, where.begin.line, what);
  }

  int read_int(const toml::node& n, const std::string& key) const {
    const auto* v = n.as_integer();
    if (v == nullptr)
      fail(n.source(), key_name(key) + " must be an integer");
    if (v->get() < INT_MIN || v->get() > INT_MAX)
      fail(n.source(), key_name(key) + " is out of range, got " + std::to_string(v->get()));
    return static_cast<int>(v->get());
  }

  uint64_t read_unsigned(const toml::node& n, const std::string& key) const {
    const auto* v = n.as_integer();
    if (v == nullptr)
      fail(n.source(), key_name(key) + " must be an integer");
    if (v->get() < 0)
      fail(n.source(), key_name(key) + " must be >= 0, got " + std::to_string(v->get()));
    return static_cast<uint64_t>(v->get());
  }

  /// An integer is accepted where a float is expected: `lr = 1` means 1.0.
  double read_double(const toml::node& n, const std::string& key) const {
    if (const auto* f = n.as_floating_point())
      return f->get();
    if (const auto* i = n.as_integer())
      return static_cast<double>(i->get());
    fail(n.source(), key_name(key) + " must be a number");
  }

  bool read_bool(const toml::node& n, const std::string& key) const {
    const auto* v = n.as_boolean();
    if (v == nullptr)
      fail(n.source(), key_name(key) + " must be a boolean");
    return v->get();
  }

  std::string read_string(const toml::node& n, const std::string& key) const {
    const auto* v = n.as_string();
    if (v == nullptr)
      fail(n.source(), key_name(key) + " must be a string");
    return v->get();
  }

  using setter = std::function<void(const toml::node&, const std::string&, train_config&)>;
  using fields = std::vector<std::pair<std::string_view, setter>>;

  /// Applies every key of `table` through `known`; a key not in it is an error.
  void read_table(const toml::table& table, const std::string& prefix, const fields& known,
                  train_config& config) const {
    for (const auto& [key, node] : table) {
      const std::string name =
          prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      const setter* found = nullptr;
      for (const auto& [field, set] : known)
        if (field == key.str())
          found = &set;
      if (found == nullptr)
        fail(key.source(), "unknown key " + key_name(name));
      (*found)(node, name, config);
    }
  }

  void read(const toml::table& root, train_config& config) const {
    const reader& r = *this;
    auto section = [&r](const fields& known) -> setter {
      return [&r, &known](const toml::node& n, const std::string& name, train_config& cfg) {
        const auto* table = n.as_table();
        if (table == nullptr)
          r.fail(n.source(), key_name(name) + " must be a table");
        r.read_table(*table, name, known, cfg);
      };
    };
    const fields model = {
        {"n_layer", [&r](auto& n, auto& k, auto& c) { c.model.n_layer = r.read_int(n, k); }},
        {"d_model", [&r](auto& n, auto& k, auto& c) { c.model.d_model = r.read_int(n, k); }},
        {"n_head", [&r](auto& n, auto& k, auto& c) { c.model.n_head = r.read_int(n, k); }},
        {"context", [&r](auto& n, auto& k, auto& c) { c.model.context = r.read_int(n, k); }},
        {"vocab", [&r](auto& n, auto& k, auto& c) { c.model.vocab = r.read_int(n, k); }},
    };
    const fields optimizer = {
        {"lr", [&r](auto& n, auto& k, auto& c) { c.optimizer.lr = r.read_double(n, k); }},
        {"min_lr_ratio",
         [&r](auto& n, auto& k, auto& c) { c.optimizer.min_lr_ratio = r.read_double(n, k); }},
        {"warmup_steps",
         [&r](auto& n, auto& k, auto& c) { c.optimizer.warmup_steps = r.read_int(n, k); }},
        {"beta1", [&r](auto& n, auto& k, auto& c) { c.optimizer.beta1 = r.read_double(n, k); }},
        {"beta2", [&r](auto& n, auto& k, auto& c) { c.optimizer.beta2 = r.read_double(n, k); }},
        {"eps", [&r](auto& n, auto& k, auto& c) { c.optimizer.eps = r.read_double(n, k); }},
        {"weight_decay",
         [&r](auto& n, auto& k, auto& c) { c.optimizer.weight_decay = r.read_double(n, k); }},
        {"grad_clip",
         [&r](auto& n, auto& k, auto& c) { c.optimizer.grad_clip = r.read_double(n, k); }},
    };
    const fields data = {
        {"path", [&r](auto& n, auto& k, auto& c) { c.data.path = r.read_string(n, k); }},
        {"val_fraction",
         [&r](auto& n, auto& k, auto& c) { c.data.val_fraction = r.read_double(n, k); }},
    };
    const fields top = {
        {"model", section(model)},
        {"optimizer", section(optimizer)},
        {"data", section(data)},
        {"batch", [&r](auto& n, auto& k, auto& c) { c.batch = r.read_int(n, k); }},
        {"steps", [&r](auto& n, auto& k, auto& c) { c.steps = r.read_int(n, k); }},
        {"seed", [&r](auto& n, auto& k, auto& c) { c.seed = r.read_unsigned(n, k); }},
        {"device", [&r](auto& n, auto& k, auto& c) { c.device = r.read_string(n, k); }},
        {"bf16", [&r](auto& n, auto& k, auto& c) { c.bf16 = r.read_bool(n, k); }},
        {"threads", [&r](auto& n, auto& k, auto& c) { c.threads = r.read_int(n, k); }},
        {"eval_every", [&r](auto& n, auto& k, auto& c) { c.eval_every = r.read_int(n, k); }},
        {"eval_batches", [&r](auto& n, auto& k, auto& c) { c.eval_batches = r.read_int(n, k); }},
        {"checkpoint_every",
         [&r](auto& n, auto& k, auto& c) { c.checkpoint_every = r.read_int(n, k); }},
        {"out", [&r](auto& n, auto& k, auto& c) { c.out = r.read_string(n, k); }},
        {"metrics_format",
         [&r](auto& n, auto& k, auto& c) { c.metrics_format = r.read_string(n, k); }},
    };
    read_table(root, "", top, config);
  }

private:
  const fs::path& source_;
};

/// First failing rule as (line, message); line 0 when no key of the rule is in `root`.
void check_rules(const train_config& config, const toml::table* root, const fs::path& source) {
  for (const rule& r : rules()) {
    const std::string message = r.check(config);
    if (message.empty())
      continue;
    int64_t line = 0;
    if (root != nullptr) {
      for (std::string_view key : r.keys) {
        if (const toml::node* n = root->at_path(key).node()) {
          line = n->source().begin.line;
          break;
        }
      }
    }
    fail_input(source, line, message);
  }
}

fs::path resolved(const fs::path& p) {
  return p.empty() ? p : fs::absolute(p).lexically_normal();
}

/// The line of every key, dotted below the top ("model.n_layer").
void record_lines(const toml::table& table, const std::string& prefix, config_origin& origin) {
  for (const auto& [key, node] : table) {
    const std::string name =
        prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    const auto line = key.source().begin.line ? key.source().begin.line : node.source().begin.line;
    origin.lines[name] = static_cast<int64_t>(line);
    if (const auto* sub = node.as_table())
      record_lines(*sub, name, origin);
  }
}

} // namespace

train_config read_train_table(const toml::table& root, const fs::path& source) {
  train_config config;
  reader(source).read(root, config);
  check_rules(config, &root, source);
  config.data.path = resolved(config.data.path);
  config.out = resolved(config.out);
  config.origin.file = source;
  record_lines(root, "", config.origin);
  return config;
}

train_config parse_train_config(std::string_view text, const fs::path& source) {
  toml::table root;
#if TOML_EXCEPTIONS
  try {
    root = toml::parse(text, source.string());
  } catch (const toml::parse_error& e) {
    fail_input(source, e.source().begin.line, "TOML syntax error: " + std::string(e.description()));
  }
#else
  toml::parse_result result = toml::parse(text, source.string());
  if (!result)
    fail_input(source, result.error().source().begin.line,
               "TOML syntax error: " + std::string(result.error().description()));
  root = std::move(result).table();
#endif
  return read_train_table(root, source);
}

train_config load_train_config(const fs::path& file) {
  return parse_train_config(read_bounded_file(file, max_config_bytes, "config file"), file);
}

void validate(const train_config& config, const fs::path& source) {
  check_rules(config, nullptr, source);
}

} // namespace deepcee::runtime
