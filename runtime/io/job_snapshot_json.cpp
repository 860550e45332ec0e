#include "runtime/io/job_snapshot_json.hpp"

#include "runtime/base/errors.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace deepcee::runtime {

namespace {

using json = nlohmann::ordered_json;

constexpr const char* format_name = "deepcee-snapshot";

json number_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json to_json(const timeline_op& o) {
  return {{"kind", o.kind}, {"micro", o.micro}, {"start_s", o.start_s}, {"end_s", o.end_s}};
}

json to_json(const stage_status& s) {
  json ops = json::array();
  for (const auto& o : s.ops)
    ops.push_back(to_json(o));
  return {{"pipeline", s.pipeline},
          {"stage", s.stage},
          {"devices", s.devices},
          {"first_layer", s.first_layer},
          {"last_layer", s.last_layer},
          {"bubble", s.bubble},
          {"ops", ops}};
}

json to_json(const device_status& d) {
  return {{"name", d.name},
          {"kind", d.kind},
          {"pipeline", d.pipeline},
          {"stage", d.stage},
          {"utilization", d.utilization},
          {"memory_used_bytes", d.memory_used_bytes},
          {"memory_capacity_bytes", d.memory_capacity_bytes}};
}

json to_json(const link_status& l) {
  return {{"name", l.name},
          {"bandwidth_Bps", l.bandwidth_Bps},
          {"latency_s", l.latency_s},
          {"plan_bandwidth_Bps", l.plan_bandwidth_Bps},
          {"plan_latency_s", l.plan_latency_s},
          {"samples", l.samples},
          {"drifted", l.drifted},
          {"bytes_sent", l.bytes_sent},
          {"transfers", l.transfers}};
}

json to_json(const allocation_status& a) {
  json samples = json::array(), compression = json::array();
  for (const auto& s : a.samples)
    samples.push_back({{"device", s.device}, {"samples", s.samples}});
  for (const auto& c : a.compression)
    compression.push_back({{"link", c.link}, {"compression", c.compression}});
  return {{"micro_batches", a.micro_batches}, {"samples", samples}, {"compression", compression}};
}

template <class T>
json array_of(const std::vector<T>& items) {
  json out = json::array();
  for (const auto& x : items)
    out.push_back(to_json(x));
  return out;
}

/// Reads the parsed document with the path of every value, so errors say where.
struct reader {
  const std::string& source;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw input_error(source + ": " + where + ": " + what);
  }
  const json& at(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object())
      fail(where, "expected an object");
    const auto it = obj.find(key);
    if (it == obj.end())
      fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }
  double number(const json& obj, const char* key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      fail(where + "." + key, "expected a finite number");
    return v.get<double>();
  }
  std::optional<double> number_or_null(const json& obj, const char* key,
                                       const std::string& where) const {
    if (at(obj, key, where).is_null())
      return std::nullopt;
    return number(obj, key, where);
  }
  int64_t integer(const json& obj, const char* key, const std::string& where,
                  int64_t low = std::numeric_limits<int32_t>::min(),
                  int64_t high = std::numeric_limits<int32_t>::max()) const {
    const auto& v = at(obj, key, where);
    if (!v.is_number_integer())
      fail(where + "." + key, "expected an integer");
    const auto x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                       ? high + 1
                       : v.get<int64_t>();
    if (x < low || x > high)
      fail(where + "." + key, "out of range");
    return x;
  }
  bool boolean(const json& obj, const char* key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_boolean())
      fail(where + "." + key, "expected true or false");
    return v.get<bool>();
  }
  std::string text(const json& obj, const char* key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    return text(v, where + "." + key);
  }
  std::string text(const json& v, const std::string& where) const {
    if (!v.is_string())
      fail(where, "expected a string");
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > max_snapshot_string)
      fail(where, "longer than " + std::to_string(max_snapshot_string) + " characters");
    return s;
  }
  const json& list(const json& obj, const char* key, const std::string& where) const {
    const auto& v = at(obj, key, where);
    if (!v.is_array())
      fail(where + "." + key, "expected a list");
    if (v.size() > max_snapshot_items)
      fail(where + "." + key, "more than " + std::to_string(max_snapshot_items) + " entries");
    return v;
  }
  template <class F>
  void each(const json& obj, const char* key, const std::string& where, F f) const {
    const auto& v = list(obj, key, where);
    for (size_t i = 0; i < v.size(); ++i)
      f(v[i], where + "." + key + "[" + std::to_string(i) + "]");
  }
  std::vector<std::string> texts(const json& obj, const char* key, const std::string& where) const {
    std::vector<std::string> out;
    each(obj, key, where,
         [&](const json& v, const std::string& at) { out.push_back(text(v, at)); });
    return out;
  }
};

timeline_op read_op(const reader& r, const json& v, const std::string& at) {
  timeline_op o{r.text(v, "kind", at), int(r.integer(v, "micro", at, 0)),
                r.number(v, "start_s", at), r.number(v, "end_s", at)};
  if (o.kind != "F" && o.kind != "B" && o.kind != "W")
    r.fail(at + ".kind", "expected F, B or W");
  return o;
}

stage_status read_stage(const reader& r, const json& v, const std::string& at) {
  stage_status s;
  s.pipeline = int(r.integer(v, "pipeline", at, 0));
  s.stage = int(r.integer(v, "stage", at, 0));
  s.devices = r.texts(v, "devices", at);
  s.first_layer = int(r.integer(v, "first_layer", at, 0));
  s.last_layer = int(r.integer(v, "last_layer", at, 0));
  s.bubble = r.number(v, "bubble", at);
  r.each(v, "ops", at,
         [&](const json& o, const std::string& w) { s.ops.push_back(read_op(r, o, w)); });
  return s;
}

device_status read_device(const reader& r, const json& v, const std::string& at) {
  return {r.text(v, "name", at),
          r.text(v, "kind", at),
          int(r.integer(v, "pipeline", at, -1)),
          int(r.integer(v, "stage", at, -1)),
          r.number(v, "utilization", at),
          r.number(v, "memory_used_bytes", at),
          r.number(v, "memory_capacity_bytes", at)};
}

link_status read_link(const reader& r, const json& v, const std::string& at) {
  return {.name = r.text(v, "name", at),
          .bandwidth_Bps = r.number(v, "bandwidth_Bps", at),
          .latency_s = r.number(v, "latency_s", at),
          .plan_bandwidth_Bps = r.number(v, "plan_bandwidth_Bps", at),
          .plan_latency_s = r.number(v, "plan_latency_s", at),
          .samples = r.integer(v, "samples", at, 0, INT64_MAX),
          .drifted = r.boolean(v, "drifted", at),
          .bytes_sent = r.number(v, "bytes_sent", at),
          .transfers = r.integer(v, "transfers", at, 0, INT64_MAX)};
}

allocation_status read_allocation(const reader& r, const json& v, const std::string& at) {
  allocation_status a;
  r.each(v, "micro_batches", at, [&](const json& m, const std::string& w) {
    if (!m.is_number_integer() || m.get<int64_t>() < 0 || m.get<int64_t>() > INT32_MAX)
      r.fail(w, "expected a count");
    a.micro_batches.push_back(m.get<int>());
  });
  r.each(v, "samples", at, [&](const json& s, const std::string& w) {
    a.samples.push_back({r.text(s, "device", w), int(r.integer(s, "samples", w, 0))});
  });
  r.each(v, "compression", at, [&](const json& c, const std::string& w) {
    a.compression.push_back({r.text(c, "link", w), r.text(c, "compression", w)});
  });
  return a;
}

/// Refuses nesting deeper than a snapshot has, before the parser builds it.
struct depth_exceeded {};

} // namespace

namespace {

json points_json(const thinned_series& series) {
  json out = json::array();
  for (const auto& p : series.points())
    out.push_back({p.step, std::isfinite(p.value) ? json(p.value) : json(nullptr)});
  return out;
}

} // namespace

std::string run_history_to_json(const run_history* h) {
  const run_history none;
  const auto& r = h ? *h : none;
  json links = json::object();
  for (const auto& [name, series] : r.link_bandwidth_Bps)
    links[name] = points_json(series);
  return json{{"loss", points_json(r.loss)},
              {"validation", points_json(r.validation)},
              {"real_samples_per_s", points_json(r.real_samples_per_s)},
              {"emulated_samples_per_s", points_json(r.emulated_samples_per_s)},
              {"links", links}}
      .dump();
}

std::string job_snapshot_to_json(const job_snapshot& s) {
  json decisions = json::array(), events = json::array(), history = json::array();
  for (const auto& d : s.decisions)
    decisions.push_back({{"step", d.step},
                         {"kind", d.kind},
                         {"reason", d.reason},
                         {"predicted_gain", d.predicted_gain}});
  for (const auto& e : s.events)
    events.push_back({{"step", e.step}, {"time_s", e.time_s}, {"text", e.text}});
  json by_kind = json::array();
  for (const auto& [kind, n] : s.decisions_by_kind)
    by_kind.push_back({{"kind", kind}, {"count", n}});
  for (double l : s.loss_history)
    history.push_back(std::isfinite(l) ? json(l) : json(nullptr));
  const json doc = {{"format", format_name},
                    {"version", s.version},
                    {"job", s.job},
                    {"model", s.model},
                    {"cluster", s.cluster},
                    {"strategy", s.strategy},
                    {"time_mode", s.time_mode},
                    {"groups", s.groups},
                    {"step", s.step},
                    {"steps", s.steps},
                    {"loss", number_or_null(s.loss)},
                    {"val_loss", number_or_null(s.val_loss)},
                    {"val_step", s.val_step},
                    {"loss_history", history},
                    {"clock_s", s.clock_s},
                    {"real_samples_per_s", number_or_null(s.real_samples_per_s)},
                    {"emulated_samples_per_s", number_or_null(s.emulated_samples_per_s)},
                    {"stages", array_of(s.stages)},
                    {"devices", array_of(s.devices)},
                    {"links", array_of(s.links)},
                    {"allocation", to_json(s.allocation)},
                    {"decisions", decisions},
                    {"events", events},
                    {"decisions_by_kind", by_kind},
                    {"events_total", s.events_total},
                    {"dropped_messages", s.dropped_messages},
                    {"dropped_frames", s.dropped_frames}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

job_snapshot job_snapshot_from_json(std::string_view text, const std::string& source) {
  const reader r{source};
  if (text.size() > max_snapshot_bytes)
    r.fail("snapshot", "larger than " + std::to_string(max_snapshot_bytes) + " bytes");
  json doc;
  try {
    doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > int(max_snapshot_depth))
        throw depth_exceeded{};
      return true;
    });
  } catch (const depth_exceeded&) {
    r.fail("snapshot", "nested deeper than " + std::to_string(max_snapshot_depth) + " levels");
  } catch (const json::exception& e) {
    r.fail("snapshot", std::string("not JSON (") + e.what() + ")");
  }
  const std::string at = "snapshot";
  if (r.text(doc, "format", at) != format_name)
    r.fail(at + ".format", std::string("expected \"") + format_name + "\"");
  job_snapshot s;
  s.version = uint64_t(r.integer(doc, "version", at, 0, INT64_MAX));
  s.job = r.text(doc, "job", at);
  s.model = r.text(doc, "model", at);
  s.cluster = r.text(doc, "cluster", at);
  s.strategy = r.text(doc, "strategy", at);
  s.time_mode = r.text(doc, "time_mode", at);
  s.groups = r.texts(doc, "groups", at);
  s.step = int(r.integer(doc, "step", at, 0));
  s.steps = int(r.integer(doc, "steps", at, 0));
  s.loss = r.number_or_null(doc, "loss", at);
  s.val_loss = r.number_or_null(doc, "val_loss", at);
  s.val_step = int(r.integer(doc, "val_step", at, 0));
  r.each(doc, "loss_history", at, [&](const json& v, const std::string& w) {
    if (v.is_null())
      s.loss_history.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (v.is_number())
      s.loss_history.push_back(v.get<double>());
    else
      r.fail(w, "expected a number or null");
  });
  s.clock_s = r.number(doc, "clock_s", at);
  s.real_samples_per_s = r.number_or_null(doc, "real_samples_per_s", at);
  s.emulated_samples_per_s = r.number_or_null(doc, "emulated_samples_per_s", at);
  r.each(doc, "stages", at,
         [&](const json& v, const std::string& w) { s.stages.push_back(read_stage(r, v, w)); });
  r.each(doc, "devices", at,
         [&](const json& v, const std::string& w) { s.devices.push_back(read_device(r, v, w)); });
  r.each(doc, "links", at,
         [&](const json& v, const std::string& w) { s.links.push_back(read_link(r, v, w)); });
  s.allocation = read_allocation(r, r.at(doc, "allocation", at), at + ".allocation");
  r.each(doc, "decisions", at, [&](const json& v, const std::string& w) {
    s.decisions.push_back({int(r.integer(v, "step", w, 0)), r.text(v, "kind", w),
                           r.text(v, "reason", w), r.number(v, "predicted_gain", w)});
  });
  r.each(doc, "events", at, [&](const json& v, const std::string& w) {
    s.events.push_back(
        {int(r.integer(v, "step", w, 0)), r.number(v, "time_s", w), r.text(v, "text", w)});
  });
  r.each(doc, "decisions_by_kind", at, [&](const json& v, const std::string& w) {
    s.decisions_by_kind[r.text(v, "kind", w)] = r.integer(v, "count", w, 0, INT64_MAX);
  });
  s.events_total = r.integer(doc, "events_total", at, 0, INT64_MAX);
  s.dropped_messages = r.integer(doc, "dropped_messages", at, 0, INT64_MAX);
  s.dropped_frames = r.integer(doc, "dropped_frames", at, 0, INT64_MAX);
  return s;
}

} // namespace deepcee::runtime
