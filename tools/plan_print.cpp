#include "tools/plan_print.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"
#include "runtime/io/chrome_trace.hpp"
#include "runtime/io/profile_toml.hpp"

#include <fstream>
#include <map>
#include <string>

namespace deepcee::tools {
namespace {

/// "4 x RTX3090 [cloud0/0 cloud0/1 ...]": kinds counted, names listed while short.
std::string devices_text(const runtime::cluster& c, const std::vector<int>& devices) {
  std::map<std::string, int> kinds;
  for (int d : devices)
    ++kinds[c.devices[size_t(d)].kind];
  std::string s;
  for (const auto& [k, n] : kinds)
    s += (s.empty() ? "" : " + ") + std::to_string(n) + " x " + k;
  s += " [";
  for (size_t i = 0; i < devices.size() && i < 8; ++i)
    s += (i ? " " : "") + c.devices[size_t(devices[i])].name;
  if (devices.size() > 8)
    s += " ... " + c.devices[size_t(devices.back())].name;
  return s + "]";
}

std::string layer_name(const runtime::model_spec& m, int layer) {
  return layer >= 0 && layer < static_cast<int>(m.layers.size()) ? m.layers[size_t(layer)].name
                                                                 : std::to_string(layer);
}

std::string samples_text(const std::vector<int>& samples) {
  std::string s;
  for (size_t i = 0; i < samples.size() && i < 16; ++i)
    s += (i ? "," : "") + std::to_string(samples[i]);
  if (samples.size() > 16)
    s += ",...";
  return s;
}

} // namespace

void print_groups(std::FILE* out, const runtime::cluster& c, const runtime::grouping& g) {
  std::fprintf(out, "groups (%s):\n", g.rule.c_str());
  for (size_t i = 0; i < g.network.size(); ++i) {
    const auto& ng = g.network[i];
    std::fprintf(out, "  network group %zu: %s\n    why: %s\n", i,
                 devices_text(c, ng.devices).c_str(), ng.reason.c_str());
    for (size_t k = 0; k < ng.compute.size(); ++k)
      std::fprintf(out, "    compute group %zu.%zu: %s\n", i, k, ng.compute[k].reason.c_str());
  }
}

void print_plan(std::FILE* out, const runtime::cluster& c, const runtime::model_spec& model,
                const runtime::plan& p) {
  std::fprintf(out, "plan %s: %zu pipeline(s), micro-batch %d, global batch %d\n",
               p.strategy.c_str(), p.pipelines.size(), p.micro_batch_size, p.global_batch());
  for (size_t pi = 0; pi < p.pipelines.size(); ++pi) {
    const auto& pp = p.pipelines[pi];
    std::fprintf(out, "  pipeline %zu: %zu stage(s), %d micro-batches, schedule %s\n", pi,
                 pp.stages.size(), pp.micro_batches, runtime::to_string(pp.schedule).c_str());
    for (size_t s = 0; s < pp.stages.size(); ++s) {
      const auto& st = pp.stages[s];
      std::fprintf(out, "    stage %zu: layers [%d, %d) %s..%s on %s, samples %s", s,
                   st.first_layer, st.last_layer, layer_name(model, st.first_layer).c_str(),
                   layer_name(model, st.last_layer - 1).c_str(),
                   devices_text(c, st.devices).c_str(), samples_text(st.samples).c_str());
      if (s + 1 < pp.stages.size())
        std::fprintf(out, ", sends %s",
                     std::string(runtime::to_string(st.send_compression)).c_str());
      if (st.recompute)
        std::fprintf(out, ", recomputes");
      std::fprintf(out, "\n");
    }
  }
  if (p.excluded.empty())
    std::fprintf(out, "  excluded: none\n");
  else {
    std::fprintf(out, "  excluded: %zu device(s)\n", p.excluded.size());
    std::string last;
    for (const auto& e : p.excluded) {
      if (e.reason == last) {
        std::fprintf(out, "    %s: (same)\n", c.devices[size_t(e.device)].name.c_str());
        continue;
      }
      std::fprintf(out, "    %s: %s\n", c.devices[size_t(e.device)].name.c_str(), e.reason.c_str());
      last = e.reason;
    }
  }
}

void print_sim(std::FILE* out, const runtime::sim_result& s) {
  std::fprintf(out,
               "simulated: %.2f samples/s, step %s, bubble %.1f%%, peak memory %s%s, FLOP "
               "utilization %.1f%%\n",
               s.samples_per_s, runtime::format_duration(s.step_time_s).c_str(),
               100 * s.bubble_ratio, runtime::format_bytes(s.peak_bytes).c_str(),
               s.out_of_memory ? " (OUT OF MEMORY)" : "", 100 * s.flops_utilization);
}

void write_trace_file(const runtime::cluster& c, const runtime::model_spec& model,
                      const runtime::profile_table& profiles, const runtime::plan& p,
                      const runtime::link_timeline& timeline, const std::string& path, int steps) {
  runtime::sim_options o;
  o.trace = true;
  o.steps = steps;
  runtime::sim_result s = runtime::simulate(c, model, profiles, p, timeline, o);
  std::ofstream f(path);
  if (!f)
    runtime::fail_input(path, 0, "cannot write the trace");
  runtime::write_chrome_trace(s, c, f);
}

runtime::profile_table profiles_for(runtime::cluster& c, const runtime::model_spec& model,
                                    const std::optional<std::string>& profile_file) {
  runtime::measured_profile measured;
  if (profile_file)
    measured = runtime::load_measured_profile(*profile_file);
  runtime::require_profile_covers(measured, c.devices);
  runtime::apply_measured_links(c, measured);
  return runtime::profile_table(model, {}, measured);
}

} // namespace deepcee::tools
