#include "runtime/errors.hpp"
#include "runtime/simulator.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// `regions` regions of `nodes` nodes of `per_node` A100-80GB each, with the given links.
cluster make_cluster(int regions, int nodes, int per_node, link_params same_node,
                     link_params same_region, link_params cross_region) {
  const auto spec = *find_device_kind("A100-80GB");
  cluster c;
  c.name = "test";
  c.links = {same_node, same_region, cross_region};
  for (int r = 0; r < regions; ++r) {
    c.regions.push_back({"r" + std::to_string(r), region_tier::cloud});
    for (int n = 0; n < nodes; ++n) {
      node nd;
      nd.name = "r" + std::to_string(r) + "n" + std::to_string(n);
      nd.region = r;
      for (int k = 0; k < per_node; ++k) {
        device d;
        d.id = static_cast<int>(c.devices.size());
        d.name = nd.name + "/" + std::to_string(k);
        d.kind = spec.kind;
        d.cls = spec.cls;
        d.node = static_cast<int>(c.nodes.size());
        d.region = r;
        d.memory_bytes = spec.memory_bytes;
        d.fp32_flops = spec.fp32_flops;
        d.bf16_flops = spec.bf16_flops;
        d.mem_bandwidth_Bps = spec.mem_bandwidth_Bps;
        nd.devices.push_back(d.id);
        c.devices.push_back(d);
      }
      c.nodes.push_back(nd);
    }
  }
  return c;
}

cluster free_links_cluster(int devices) {
  return make_cluster(1, 1, devices, {0, inf}, {0, inf}, {0, inf});
}

model_config small_model(int n_layer = 6) {
  return model_config{n_layer, 256, 4, 128, 512};
}

/// One pipeline; stage s holds the layers [cuts[s], cuts[s+1]) on devices `devs[s]`.
plan pipeline_plan_of(const model_config& m, const std::vector<std::vector<int>>& devs,
                      const std::vector<int>& cuts, int micro_batch, int micro_batches,
                      schedule_kind kind, compression comp = compression::none) {
  plan p;
  p.strategy = "test";
  p.model = m;
  p.micro_batch_size = micro_batch;
  pipeline_plan pp;
  pp.micro_batches = micro_batches;
  pp.schedule = kind;
  for (size_t s = 0; s < devs.size(); ++s) {
    stage_plan st;
    st.devices = devs[s];
    const int n = static_cast<int>(devs[s].size());
    for (int k = 0; k < n; ++k)
      st.samples.push_back(micro_batch / n + (k < micro_batch % n ? 1 : 0));
    st.first_layer = cuts[s];
    st.last_layer = cuts[s + 1];
    st.send_compression = comp;
    pp.stages.push_back(st);
  }
  p.pipelines.push_back(pp);
  return p;
}

/// Even cut of n_layer + 2 pipeline layers into p stages.
std::vector<int> even_cuts(int layers, int p) {
  std::vector<int> cuts;
  for (int s = 0; s <= p; ++s)
    cuts.push_back(s * layers / p);
  return cuts;
}

double optimizer_time(const model_spec& spec, const device& d, int first, int last) {
  double bytes = 0;
  for (int l = first; l < last; ++l) {
    const auto& layer = spec.layers[static_cast<size_t>(l)];
    bytes += double(layer.state_bytes() + layer.param_bytes + layer.optimizer_bytes);
  }
  return bytes / d.mem_bandwidth_Bps;
}

struct fixture {
  model_config config = small_model();
  model_spec spec = make_model_spec(config, "t");
  profile_table profile{spec};
};

} // namespace

BOOST_AUTO_TEST_SUITE(simulator)

BOOST_FIXTURE_TEST_CASE(single_device_is_f_b_w_plus_optimizer, fixture) {
  const auto c = free_links_cluster(1);
  const int layers = config.n_layer + 2;
  const auto p = pipeline_plan_of(config, {{0}}, {0, layers}, 4, 1, schedule_kind::one_f_one_b);
  const auto r = simulate(c, spec, profile, p);
  double expected = optimizer_time(spec, c.devices[0], 0, layers);
  for (int l = 0; l < layers; ++l) {
    const auto lc = profile.cost(c.devices[0], l, 4);
    expected += lc.f_s + lc.b_s + lc.w_s;
  }
  BOOST_TEST(r.step_time_s == expected, tt::tolerance(1e-9));
  BOOST_TEST(r.samples_per_s == 4 / expected, tt::tolerance(1e-9));
  BOOST_TEST(r.devices.size() == 1u);
  BOOST_TEST(r.global_batch == 4);
  BOOST_TEST(!r.out_of_memory);
}

BOOST_FIXTURE_TEST_CASE(pipeline_reproduces_time_schedule, fixture) {
  for (auto kind : {schedule_kind::one_f_one_b, schedule_kind::gpipe, schedule_kind::zb_h1,
                    schedule_kind::zb_h2, schedule_kind::greedy}) {
    const int p = 4, m = 8;
    const auto c = free_links_cluster(p);
    const auto pl = pipeline_plan_of(config, {{0}, {1}, {2}, {3}}, even_cuts(config.n_layer + 2, p),
                                     2, m, kind);
    const auto costs = pipeline_stage_costs(c, profile, pl, 0);
    const auto timing = time_schedule(schedule_of(pl.pipelines[0], costs), costs);
    const auto r = simulate(c, spec, profile, pl);
    double last = 0;
    for (const auto& st : r.stages[0])
      last = std::max(last, st.compute_end_s);
    BOOST_TEST_INFO("schedule " << to_string(kind));
    BOOST_TEST(last == timing.makespan, tt::tolerance(1e-9));
  }
}

BOOST_FIXTURE_TEST_CASE(transfer_takes_latency_plus_bytes_over_bandwidth, fixture) {
  const double alpha = 3e-3, bw = 1e9;
  const auto c = make_cluster(1, 2, 1, {0, inf}, {alpha, bw}, {0, inf});
  const int layers = config.n_layer + 2;
  const auto pl =
      pipeline_plan_of(config, {{0}, {1}}, {0, 3, layers}, 2, 1, schedule_kind::one_f_one_b);
  const auto costs = pipeline_stage_costs(c, profile, pl, 0);
  const double bytes = double(spec.transfer_bytes(2, compression::none));
  BOOST_TEST(costs[0].comm_to_next == alpha + bytes / bw, tt::tolerance(1e-12));
  // One micro-batch: F0 | send | F1 B1 W1 | send back | B0 W0 (fused), then all-reduce-free
  // optimizer steps on each device.
  const auto r = simulate(c, spec, profile, pl);
  const double compute_end0 = costs[0].f + costs[1].f + costs[1].b + costs[1].w +
                              2 * (alpha + bytes / bw) + costs[0].b + costs[0].w;
  BOOST_TEST(r.stages[0][0].compute_end_s == compute_end0, tt::tolerance(1e-9));
  BOOST_TEST(r.links.size() == 2u);
  for (const auto& l : r.links) {
    BOOST_TEST(l.bytes == bytes);
    BOOST_TEST(l.busy_s == bytes / bw, tt::tolerance(1e-12));
  }
}

BOOST_FIXTURE_TEST_CASE(shared_wan_pipe_serializes_flows, fixture) {
  // Two pipelines, each with stage 0 in region 0 and stage 1 in region 1: both send
  // their activation over the same region pair pipe at the same moment.
  const double alpha = 10e-3, bw = 1e6;
  const auto c = make_cluster(2, 1, 2, {0, inf}, {0, inf}, {alpha, bw});
  const int layers = config.n_layer + 2;
  auto pl = pipeline_plan_of(config, {{0}, {2}}, {0, 3, layers}, 2, 1, schedule_kind::gpipe);
  auto second = pipeline_plan_of(config, {{1}, {3}}, {0, 3, layers}, 2, 1, schedule_kind::gpipe);
  pl.pipelines.push_back(second.pipelines[0]);
  const auto r = simulate(c, spec, profile, pl);
  const double bytes = double(spec.transfer_bytes(2, compression::none));
  const auto costs = pipeline_stage_costs(c, profile, pl, 0);
  // The second flow waits for the first: its F on stage 1 starts 2X/B + alpha after F0.
  const auto one = r.stages[0][1].compute_end_s;
  const auto two = r.stages[1][1].compute_end_s;
  BOOST_TEST(std::max(one, two) ==
                 costs[0].f + alpha + 2 * bytes / bw + costs[1].f + costs[1].b + costs[1].w,
             tt::tolerance(1e-9));
  BOOST_TEST(std::abs(two - one) == bytes / bw, tt::tolerance(1e-9));
  int wan = 0;
  for (const auto& l : r.links)
    if (l.kind == link_kind::region_pair) {
      ++wan;
      BOOST_TEST(l.bytes == 2 * bytes); // both pipelines' activations (or gradients)
    }
  BOOST_TEST(wan == 2);
}

BOOST_FIXTURE_TEST_CASE(ring_allreduce_formula, fixture) {
  // Data parallelism over n devices of one region: the step is compute, a ring
  // all-reduce of every gradient, and the optimizer.
  const int n = 4;
  const double alpha = 1e-3, bw = 2e9;
  const auto c = make_cluster(1, n, 1, {0, inf}, {alpha, bw}, {0, inf});
  const int layers = config.n_layer + 2;
  plan pl;
  pl.model = config;
  pl.micro_batch_size = 2;
  for (int d = 0; d < n; ++d)
    pl.pipelines.push_back(
        pipeline_plan_of(config, {{d}}, {0, layers}, 2, 1, schedule_kind::one_f_one_b)
            .pipelines[0]);
  const auto r = simulate(c, spec, profile, pl);
  double grad = 0;
  for (const auto& l : spec.layers)
    grad += double(l.grad_bytes);
  const double ring = 2.0 * (n - 1) / n * grad / bw + 2.0 * (n - 1) * alpha;
  BOOST_TEST(r.devices[0].allreduce_s == ring, tt::tolerance(1e-9));
  const double compute = r.devices[0].compute_s;
  BOOST_TEST(r.step_time_s == compute + ring + optimizer_time(spec, c.devices[0], 0, layers),
             tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
