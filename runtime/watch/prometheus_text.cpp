#include "runtime/watch/prometheus_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace deepcee::runtime {

namespace {

using labels = std::vector<std::pair<std::string_view, std::string>>;

/// Writes one metric family after another: its HELP and TYPE lines, then its samples.
class exposition {
public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    for (const char c : help) {
      if (c == '\\')
        out_ += "\\\\";
      else if (c == '\n')
        out_ += "\\n";
      else
        out_ += c;
    }
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void sample(const labels& ls, double value) {
    out_ += name_;
    if (!ls.empty()) {
      out_ += '{';
      for (size_t i = 0; i < ls.size(); ++i) {
        if (i > 0)
          out_ += ',';
        out_ += ls[i].first;
        out_ += "=\"";
        out_ += prometheus_label_value(ls[i].second);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += prometheus_number(value);
    out_ += '\n';
  }
  void sample(double value) { sample({}, value); }

  std::string text() && { return std::move(out_); }

private:
  std::string out_;
  std::string_view name_;
};

/// A link's endpoints from its name "cloud0/1 -> edge0/0".
std::pair<std::string, std::string> endpoints(const std::string& link) {
  constexpr std::string_view arrow = " -> ";
  const auto at = link.find(arrow);
  if (at == std::string::npos)
    return {link, ""};
  return {link.substr(0, at), link.substr(at + arrow.size())};
}

void job_families(exposition& e, const job_snapshot& s) {
  e.family("deepcee_job_info", "gauge",
           "The job's name, model, cluster, plan strategy and time mode (value 1).");
  e.sample({{"job", s.job},
            {"model", s.model},
            {"cluster", s.cluster},
            {"strategy", s.strategy},
            {"time_mode", s.time_mode}},
           1);
  e.family("deepcee_snapshot_version", "gauge", "Snapshots the job has published.");
  e.sample(double(s.version));
  e.family("deepcee_step", "gauge", "The last finished training step.");
  e.sample(s.step);
  e.family("deepcee_steps", "gauge", "The steps the run is to take in all.");
  e.sample(s.steps);
  e.family("deepcee_loss", "gauge", "Training loss of the last step (none in dry mode).");
  if (s.loss)
    e.sample(*s.loss);
  e.family("deepcee_validation_loss", "gauge", "The last validation loss.");
  if (s.val_loss)
    e.sample(*s.val_loss);
  e.family("deepcee_validation_step", "gauge", "The step of the last validation.");
  if (s.val_loss)
    e.sample(s.val_step);
  e.family("deepcee_clock_seconds", "gauge",
           "The last step's end on the job's clock (virtual, or real in wall time).");
  e.sample(s.clock_s);
  e.family("deepcee_samples_per_second", "gauge",
           "Samples per second of the last step: real (host time) and emulated (virtual clock).");
  if (s.real_samples_per_s)
    e.sample({{"clock", "real"}}, *s.real_samples_per_s);
  if (s.emulated_samples_per_s)
    e.sample({{"clock", "emulated"}}, *s.emulated_samples_per_s);
}

void stage_and_device_families(exposition& e, const job_snapshot& s) {
  e.family("deepcee_stage_bubble_ratio", "gauge",
           "Idle share of a stage's compute window in the last step, 0..1.");
  for (const auto& st : s.stages)
    e.sample({{"pipeline", std::to_string(st.pipeline)}, {"stage", std::to_string(st.stage)}},
             st.bubble);
  const auto device_labels = [](const device_status& d) {
    return labels{{"device", d.name}, {"kind", d.kind}};
  };
  e.family("deepcee_device_utilization_ratio", "gauge",
           "Share of the last step a device was busy in F, B and W, 0..1.");
  for (const auto& d : s.devices)
    e.sample(device_labels(d), d.utilization);
  e.family("deepcee_device_memory_used_bytes", "gauge",
           "The simulator's peak memory estimate for a device's share.");
  for (const auto& d : s.devices)
    e.sample(device_labels(d), d.memory_used_bytes);
  e.family("deepcee_device_memory_capacity_bytes", "gauge", "A device's memory.");
  for (const auto& d : s.devices)
    e.sample(device_labels(d), d.memory_capacity_bytes);
}

void link_families(exposition& e, const job_snapshot& s) {
  struct link_metric {
    const char* name;
    const char* type;
    const char* help;
    double link_status::*value;
  };
  static const link_metric metrics[] = {
      {"deepcee_link_bandwidth_bytes_per_second", "gauge",
       "A link's bandwidth as the adapter estimates it (the plan's before any sample).",
       &link_status::bandwidth_Bps},
      {"deepcee_link_latency_seconds", "gauge",
       "A link's latency as the adapter estimates it (the plan's before any sample).",
       &link_status::latency_s},
      {"deepcee_link_plan_bandwidth_bytes_per_second", "gauge",
       "A link's bandwidth in the cluster file the plan was made for.",
       &link_status::plan_bandwidth_Bps},
      {"deepcee_link_plan_latency_seconds", "gauge",
       "A link's latency in the cluster file the plan was made for.", &link_status::plan_latency_s},
      {"deepcee_link_sent_bytes_total", "counter", "Bytes sent over a link so far.",
       &link_status::bytes_sent},
  };
  std::vector<labels> link_labels;
  for (const auto& l : s.links) {
    auto [from, to] = endpoints(l.name);
    link_labels.push_back({{"from", std::move(from)}, {"to", std::move(to)}});
  }
  for (const auto& m : metrics) {
    e.family(m.name, m.type, m.help);
    for (size_t i = 0; i < s.links.size(); ++i)
      e.sample(link_labels[i], s.links[i].*m.value);
  }
  e.family("deepcee_link_transfers_total", "counter", "Transfers over a link so far.");
  for (size_t i = 0; i < s.links.size(); ++i)
    e.sample(link_labels[i], double(s.links[i].transfers));
  e.family("deepcee_link_drifted", "gauge",
           "1 while the adapter finds a link outside its band around the plan's figures.");
  for (size_t i = 0; i < s.links.size(); ++i)
    e.sample(link_labels[i], s.links[i].drifted ? 1.0 : 0.0);
}

void count_families(exposition& e, const job_snapshot& s) {
  e.family("deepcee_dropped_messages_total", "counter",
           "Malformed messages the stages dropped so far.");
  e.sample(double(s.dropped_messages));
  e.family("deepcee_dropped_frames_total", "counter",
           "Snapshot frames the endpoint dropped for slow clients so far.");
  e.sample(double(s.dropped_frames));
  e.family("deepcee_adapter_decisions_total", "counter", "The adapter's decisions, by kind.");
  for (const auto& [kind, n] : s.decisions_by_kind)
    e.sample({{"kind", kind}}, double(n));
  e.family("deepcee_injected_events_total", "counter", "Events and faults injected so far.");
  e.sample(double(s.events_total));
}

} // namespace

std::string prometheus_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string prometheus_number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  // Whole numbers (steps, bytes, counts) as integers: 3000000 rather than 3e+06.
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, int64_t(v));
    return std::string(buffer, ec == std::errc{} ? end : buffer);
  }
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, ec == std::errc{} ? end : buffer);
}

std::string job_snapshot_to_prometheus(const job_snapshot& s) {
  exposition e;
  job_families(e, s);
  stage_and_device_families(e, s);
  link_families(e, s);
  count_families(e, s);
  return std::move(e).text();
}

} // namespace deepcee::runtime
