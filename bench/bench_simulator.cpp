// simulate() wall time against cluster size and micro-batch count: the planner calls it
// for every candidate plan, so it must stay well under a second at 1024 devices.
#include "runtime/sim/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

using namespace deepcee::runtime;

namespace {

/// `devices` A100s in 8 regions of 16-device nodes... arranged as `pipelines` pipelines of
/// `stages` stages with `per_stage` devices each (data parallel inside a stage).
cluster make_cluster(int devices) {
  const auto spec = *find_device_kind("A100-80GB");
  cluster c;
  c.name = "bench";
  const int regions = std::min(8, std::max(1, devices / 16));
  for (int r = 0; r < regions; ++r)
    c.regions.push_back({"r" + std::to_string(r), region_tier::cloud});
  for (int i = 0; i < devices; ++i) {
    if (i % 8 == 0) {
      node n;
      n.name = "n" + std::to_string(i / 8);
      n.region = (i / 8) % regions;
      c.nodes.push_back(n);
    }
    device d;
    d.id = i;
    d.name = c.nodes.back().name + "/" + std::to_string(i % 8);
    d.kind = spec.kind;
    d.cls = spec.cls;
    d.node = static_cast<int>(c.nodes.size()) - 1;
    d.region = c.nodes.back().region;
    d.memory_bytes = spec.memory_bytes;
    d.fp32_flops = spec.fp32_flops;
    d.bf16_flops = spec.bf16_flops;
    d.mem_bandwidth_Bps = spec.mem_bandwidth_Bps;
    c.nodes.back().devices.push_back(i);
    c.devices.push_back(d);
  }
  return c;
}

plan make_plan(const model_config& m, int devices, int stages, int per_stage, int micro_batches,
               schedule_kind kind) {
  plan p;
  p.model = m;
  p.micro_batch_size = per_stage;
  const int layers = m.n_layer + 2;
  const int pipelines = devices / (stages * per_stage);
  int next = 0;
  for (int q = 0; q < pipelines; ++q) {
    pipeline_plan pp;
    pp.micro_batches = micro_batches;
    pp.schedule = kind;
    for (int s = 0; s < stages; ++s) {
      stage_plan st;
      for (int k = 0; k < per_stage; ++k) {
        st.devices.push_back(next++);
        st.samples.push_back(1);
      }
      st.first_layer = s * layers / stages;
      st.last_layer = (s + 1) * layers / stages;
      st.send_compression = compression::fp16;
      pp.stages.push_back(st);
    }
    p.pipelines.push_back(pp);
  }
  return p;
}

} // namespace

int main() {
  const auto m = *model_preset("gpt2-1.5b");
  const auto spec = make_model_spec(m, "gpt2-1.5b");
  const profile_table profile(spec);
  std::printf("%8s %7s %10s %6s %9s %12s %12s\n", "devices", "stages", "per_stage", "micro",
              "schedule", "simulate_ms", "step_s");
  struct row {
    int devices, stages, per_stage, micro;
    schedule_kind kind;
  };
  const row rows[] = {
      {64, 8, 2, 16, schedule_kind::one_f_one_b},    {256, 16, 2, 32, schedule_kind::zb_h1},
      {1024, 16, 4, 64, schedule_kind::one_f_one_b}, {1024, 16, 4, 64, schedule_kind::zb_h2},
      {1024, 32, 2, 64, schedule_kind::zb_h1},       {1024, 32, 2, 64, schedule_kind::greedy},
      {1024, 8, 8, 64, schedule_kind::gpipe}};
  for (const auto& r : rows) {
    const auto c = make_cluster(r.devices);
    const auto p = make_plan(m, r.devices, r.stages, r.per_stage, r.micro, r.kind);
    double best = std::numeric_limits<double>::infinity();
    sim_result res;
    for (int k = 0; k < 3; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      res = simulate(c, spec, profile, p);
      const auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf("%8d %7d %10d %6d %9s %12.1f %12.3f\n", r.devices, r.stages, r.per_stage, r.micro,
                to_string(r.kind).c_str(), best, res.step_time_s);
  }
  return 0;
}
