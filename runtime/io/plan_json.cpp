#include "runtime/io/plan_json.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <system_error>

/// The plan file (JSON). `deepcee plan --json` writes it; the runtime and `deepcee simulate`
/// read it. Unknown keys are ignored, so that later versions may add fields. Missing
/// required keys, wrong types and unknown names are input_errors naming the file and the
/// JSON path. For example:
///
///     {
///       "format": "deepcee-plan", "version": 1,
///       "strategy": "deepcee", "model_name": "gpt2-124m",
///       "model": {"n_layer": 12, "d_model": 768, "n_head": 12, "context": 1024, "vocab": 50257},
///       "micro_batch_size": 4,
///       "global_batch": 64,                       // informational, recomputed on load
///       "pipelines": [
///         {"micro_batches": 8, "schedule": "zb-h1",
///          "stages": [{"devices": [0, 1], "samples": [3, 1],
///                      "first_layer": 0, "last_layer": 7, "send_compression": "fp16",
///                      "recompute": true}]}                  // optional, false if absent
///       ],
///       "excluded": [{"device": 9, "reason": "link to cloud 100 Mbps cannot feed it"}]
///     }
namespace deepcee::runtime {

namespace {

using json = nlohmann::ordered_json;

/// Reads JSON with the path of every value, so errors say where.
struct reader {
  const std::filesystem::path& source;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    fail_input(source, 0, where + ": " + what);
  }
  const json& at(const json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object())
      fail(where, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end())
      fail(where, "missing \"" + key + "\"");
    return *it;
  }
  int integer(const json& obj, const std::string& key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_number_integer())
      fail(where + "." + key, "expected an integer");
    return v.get<int>();
  }
  int integer_or(const json& obj, const std::string& key, int fallback,
                 const std::string& where) const {
    return obj.contains(key) ? integer(obj, key, where) : fallback;
  }
  std::string text(const json& obj, const std::string& key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_string())
      fail(where + "." + key, "expected a string");
    return v.get<std::string>();
  }
  std::string text_or(const json& obj, const std::string& key, const std::string& fallback,
                      const std::string& where) const {
    return obj.contains(key) ? text(obj, key, where) : fallback;
  }
  bool flag_or(const json& obj, const std::string& key, bool fallback,
               const std::string& where) const {
    if (!obj.contains(key))
      return fallback;
    const auto& v = at(obj, key, where);
    if (!v.is_boolean())
      fail(where + "." + key, "expected true or false");
    return v.get<bool>();
  }
  const json& array(const json& obj, const std::string& key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_array())
      fail(where + "." + key, "expected an array");
    return v;
  }
  std::vector<int> ints(const json& obj, const std::string& key, const std::string& where) const {
    std::vector<int> out;
    const auto& a = array(obj, key, where);
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_number_integer())
        fail(where + "." + key + "[" + std::to_string(i) + "]", "expected an integer");
      out.push_back(a[i].get<int>());
    }
    return out;
  }
};

} // namespace

std::string plan_to_json(const plan& p) {
  json j;
  j["format"] = "deepcee-plan";
  j["version"] = 1;
  j["strategy"] = p.strategy;
  j["model_name"] = p.model_name;
  j["model"] = {{"n_layer", p.model.n_layer},
                {"d_model", p.model.d_model},
                {"n_head", p.model.n_head},
                {"context", p.model.context},
                {"vocab", p.model.vocab}};
  j["micro_batch_size"] = p.micro_batch_size;
  j["global_batch"] = p.global_batch();
  json pipes = json::array();
  for (const auto& pp : p.pipelines) {
    json stages = json::array();
    for (const auto& st : pp.stages) {
      json stage = {{"devices", st.devices},
                    {"samples", st.samples},
                    {"first_layer", st.first_layer},
                    {"last_layer", st.last_layer},
                    {"send_compression", std::string(to_string(st.send_compression))}};
      if (st.recompute) // absent reads as false: plans without recomputation stay as they were
        stage["recompute"] = true;
      stages.push_back(std::move(stage));
    }
    pipes.push_back({{"micro_batches", pp.micro_batches},
                     {"schedule", to_string(pp.schedule)},
                     {"stages", std::move(stages)}});
  }
  j["pipelines"] = std::move(pipes);
  json excluded = json::array();
  for (const auto& e : p.excluded)
    excluded.push_back({{"device", e.device}, {"reason", e.reason}});
  j["excluded"] = std::move(excluded);
  return j.dump(2) + "\n";
}

plan plan_from_json(const std::string& text, const std::filesystem::path& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail_input(source, 0, std::string("not valid JSON: ") + e.what());
  }
  const reader r{source};
  if (!j.is_object())
    r.fail("plan", "expected a JSON object");
  if (j.contains("format") && (!j["format"].is_string() || j["format"] != "deepcee-plan"))
    r.fail("format", "not a deepcee plan (expected \"deepcee-plan\")");
  if (int v = r.integer_or(j, "version", 1, "plan"); v != 1)
    r.fail("version", "unsupported plan version " + std::to_string(v) + " (this build reads 1)");
  plan p;
  p.strategy = r.text_or(j, "strategy", "", "plan");
  p.model_name = r.text_or(j, "model_name", "custom", "plan");
  const auto& m = r.at(j, "model", "plan");
  p.model.n_layer = r.integer(m, "n_layer", "model");
  p.model.d_model = r.integer(m, "d_model", "model");
  p.model.n_head = r.integer(m, "n_head", "model");
  p.model.context = r.integer(m, "context", "model");
  p.model.vocab = r.integer(m, "vocab", "model");
  p.micro_batch_size = r.integer(j, "micro_batch_size", "plan");
  const auto& pipes = r.array(j, "pipelines", "plan");
  for (size_t pi = 0; pi < pipes.size(); ++pi) {
    const std::string pw = "pipelines[" + std::to_string(pi) + "]";
    pipeline_plan pp;
    pp.micro_batches = r.integer(pipes[pi], "micro_batches", pw);
    const std::string sched = r.text_or(pipes[pi], "schedule", "1f1b", pw);
    try {
      pp.schedule = parse_schedule_kind(sched);
    } catch (const std::invalid_argument&) {
      r.fail(pw + ".schedule",
             "unknown schedule \"" + sched + "\" (gpipe, 1f1b, zb-h1, zb-h2, greedy)");
    }
    const auto& stages = r.array(pipes[pi], "stages", pw);
    for (size_t si = 0; si < stages.size(); ++si) {
      const std::string sw = pw + ".stages[" + std::to_string(si) + "]";
      stage_plan st;
      st.devices = r.ints(stages[si], "devices", sw);
      st.samples = r.ints(stages[si], "samples", sw);
      st.first_layer = r.integer(stages[si], "first_layer", sw);
      st.last_layer = r.integer(stages[si], "last_layer", sw);
      const std::string comp = r.text_or(stages[si], "send_compression", "none", sw);
      auto c = parse_compression(comp);
      if (!c)
        r.fail(sw + ".send_compression",
               "unknown compression \"" + comp + "\" (none, fp16, bf16, int8)");
      st.send_compression = *c;
      st.recompute = r.flag_or(stages[si], "recompute", false, sw);
      pp.stages.push_back(std::move(st));
    }
    p.pipelines.push_back(std::move(pp));
  }
  if (j.contains("excluded")) {
    const auto& ex = r.array(j, "excluded", "plan");
    for (size_t i = 0; i < ex.size(); ++i) {
      const std::string ew = "excluded[" + std::to_string(i) + "]";
      p.excluded.push_back({r.integer(ex[i], "device", ew), r.text_or(ex[i], "reason", "", ew)});
    }
  }
  validate_plan(p, -1, source);
  return p;
}

void save_plan(const plan& p, const std::filesystem::path& path) {
  // Written next to the target and renamed, so a reader never sees half a plan.
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail_input(path, 0, "cannot write the plan");
    out << plan_to_json(p);
    out.flush();
    if (!out)
      fail_input(path, 0, "cannot write the plan");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail_input(path, 0, "cannot write the plan: " + ec.message());
  }
}

plan load_plan(const std::filesystem::path& path) {
  return plan_from_json(read_bounded_file(path, max_config_bytes, "plan file"), path);
}

} // namespace deepcee::runtime
