#include "runtime/base/errors.hpp"
#include "runtime/cluster/codec_cost.hpp"
#include "runtime/io/chrome_trace.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/sim/simulator.hpp"

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
  double expected = profile.optimizer_s(c.devices[0], 0, layers);
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

BOOST_FIXTURE_TEST_CASE(a_measured_optimizer_step_replaces_the_estimate, fixture) {
  const auto c = free_links_cluster(1);
  const int layers = config.n_layer + 2;
  const auto p = pipeline_plan_of(config, {{0}}, {0, layers}, 4, 1, schedule_kind::one_f_one_b);
  measured_profile measured;
  measured.optimizers = {{c.devices[0].kind, layer_kind::embedding, 3e-3, 0},
                         {c.devices[0].kind, layer_kind::block, 5e-3, 0},
                         {c.devices[0].kind, layer_kind::head, 2e-3, 0}};
  const profile_table with_steps(spec, {}, measured);
  const double estimated = simulate(c, spec, profile, p).step_time_s;
  const double was = profile.optimizer_s(c.devices[0], 0, layers);
  const double now = 3e-3 + config.n_layer * 5e-3 + 2e-3;
  BOOST_TEST(simulate(c, spec, with_steps, p).step_time_s == estimated - was + now,
             tt::tolerance(1e-9));
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
    // The step begins with the optimizer steps (of the step before); the first stage's
    // gates the schedule, the others' end before their first input comes.
    const auto cut = even_cuts(config.n_layer + 2, p)[1];
    BOOST_TEST(last == profile.optimizer_s(c.devices[0], 0, cut) + timing.makespan,
               tt::tolerance(1e-9));
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
  // Stage 0 runs on the coordinator's node: its optimizer step (of the step before) begins
  // the step.
  const double compute_end0 = profile.optimizer_s(c.devices[0], 0, 3) + costs[0].f + costs[1].f +
                              costs[1].b + costs[1].w + 2 * (alpha + bytes / bw) + costs[0].b +
                              costs[0].w;
  BOOST_TEST(r.stages[0][0].compute_end_s == compute_end0, tt::tolerance(1e-9));
  BOOST_TEST(r.links.size() == 2u);
  for (const auto& l : r.links) {
    BOOST_TEST(l.bytes == bytes);
    BOOST_TEST(l.busy_s == bytes / bw, tt::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(an_answer_from_another_node_crosses_the_link_both_ways) {
  // 3 ms each way from t = 0, 5 ms from t = 1 s.
  const std::vector<link_timeline::piece> link{{0.0, {3e-3, 1e9}, 0, 0}, {1.0, {5e-3, 1e9}, 0, 0}};
  BOOST_TEST(apart_answer_s(link, 0.5, 0.52, 0.01) == 0.5 + 0.01 + 6e-3, tt::tolerance(1e-12));
  BOOST_TEST(apart_answer_s(link, 1.5, 1.52, 0.01) == 1.5 + 0.01 + 10e-3, tt::tolerance(1e-12));
  // The device's word is believed up to the real round trip it was part of, never below 0.
  BOOST_TEST(apart_answer_s(link, 0.5, 0.504, 60.0) == 0.5 + 0.004 + 6e-3, tt::tolerance(1e-12));
  BOOST_TEST(apart_answer_s(link, 0.5, 0.504, -1.0) == 0.5 + 6e-3, tt::tolerance(1e-12));
  BOOST_TEST(apart_answer_s({}, 0.5, 0.6, 0.01) == 0.51, tt::tolerance(1e-12)); // one node
}

BOOST_AUTO_TEST_CASE(a_step_begins_once_its_start_is_in_and_its_optimizer_would_be_done) {
  // The order came at 1.000 s, the start (sent later, after the step loop's turnaround) at
  // 1.004 s; the optimizer took 3 ms. On the node of the coordinator (no latency) the step
  // begins with the start; 2 ms away, the optimizer would have begun at 1.002 s.
  BOOST_TEST(step_begin_due_s(1.004, 1.000, 0.0, 0.003) == 1.004, tt::tolerance(1e-12));
  BOOST_TEST(step_begin_due_s(1.004, 1.000, 0.002, 0.003) == 1.005, tt::tolerance(1e-12));
  // A start that came with its order waits for the whole optimizer step.
  BOOST_TEST(step_begin_due_s(1.000, 1.000, 0.0, 0.003) == 1.003, tt::tolerance(1e-12));
}

BOOST_FIXTURE_TEST_CASE(an_op_ends_with_its_last_answer, fixture) {
  // One stage on a fast device on the stage's node and a slow one on another node 20 ms
  // away: each answer is its device's time plus its round trip (none for the near one).
  const double alpha = 20e-3;
  auto c = make_cluster(1, 2, 1, {0, inf}, {alpha, inf}, {0, inf});
  const int layers = config.n_layer + 2;
  for (bool slow_far : {true, false}) {
    auto slowed = c;
    slowed.devices[slow_far ? 1 : 0].fp32_flops /= 4;
    slowed.devices[slow_far ? 1 : 0].mem_bandwidth_Bps /= 4;
    const auto p =
        pipeline_plan_of(config, {{0, 1}}, {0, layers}, 2, 1, schedule_kind::one_f_one_b);
    sim_options traced;
    traced.trace = true;
    const auto r = simulate(slowed, spec, profile, p, {}, traced);
    double f_near = 0, f_far = 0;
    for (int l = 0; l < layers; ++l) {
      f_near += profile.cost(slowed.devices[0], l, 1).f_s;
      f_far += profile.cost(slowed.devices[1], l, 1).f_s;
    }
    const double first_op = std::max(f_near, f_far + 2 * alpha);
    const auto on_near = [&](const char* name) {
      const auto e = std::find_if(r.events.begin(), r.events.end(), [&](const trace_event& x) {
        return x.name == name && x.track == 0;
      });
      BOOST_REQUIRE(e != r.events.end());
      return *e;
    };
    const auto f = on_near("F0"), b = on_near("B0");
    BOOST_TEST(b.start_s - f.start_s == first_op, tt::tolerance(1e-9));
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
  BOOST_TEST(std::max(one, two) == profile.optimizer_s(c.devices[0], 0, 3) + costs[0].f + alpha +
                                       2 * bytes / bw + costs[1].f + costs[1].b + costs[1].w,
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
  // all-reduce of every gradient, and the optimizer; the pipelines on other nodes than the
  // coordinator's (device 0's) get the start and send their report over a link: alpha each.
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
  BOOST_TEST(r.step_time_s ==
                 compute + ring + profile.optimizer_s(c.devices[0], 0, layers) + 2 * alpha,
             tt::tolerance(1e-9));
}

/// Data parallelism: one single-stage pipeline per device.
plan data_parallel(const model_config& config, int devices, int micro_batch) {
  plan pl;
  pl.model = config;
  pl.micro_batch_size = micro_batch;
  for (int d = 0; d < devices; ++d)
    pl.pipelines.push_back(pipeline_plan_of(config, {{d}}, {0, config.n_layer + 2}, micro_batch, 1,
                                            schedule_kind::one_f_one_b)
                               .pipelines[0]);
  return pl;
}

BOOST_FIXTURE_TEST_CASE(hierarchical_allreduce_across_regions, fixture) {
  const double a_in = 1e-4, b_in = 10e9, a_wan = 40e-3, b_wan = 100e6;
  const auto c = make_cluster(2, 2, 1, {0, inf}, {a_in, b_in}, {a_wan, b_wan});
  const auto r = simulate(c, spec, profile, data_parallel(config, 4, 2));
  double x = 0;
  for (const auto& l : spec.layers)
    x += double(l.grad_bytes);
  const double region = 2.0 * 1 / 2 * x / b_in + 2 * a_in;   // n_r = 2: reduce, broadcast
  const double across = 2.0 * 1 / 2 * x / b_wan + 2 * a_wan; // ring over 2 leaders
  BOOST_TEST(r.devices[0].allreduce_s == 2 * region + across, tt::tolerance(1e-9));
  // Cheaper than a flat ring whose bottleneck is the WAN.
  BOOST_TEST(r.devices[0].allreduce_s < 2.0 * 3 / 4 * x / b_wan + 6 * a_wan);
}

BOOST_AUTO_TEST_CASE(transfer_integrates_bandwidth_changes) {
  const std::vector<link_timeline::piece> h = {{0.0, {0.01, 100.0}}, {1.0, {0.02, 50.0}}};
  BOOST_TEST(transfer_duration(h, 0.5, 100.0) == 0.01 + 0.5 + 1.0, tt::tolerance(1e-12));
  BOOST_TEST(transfer_duration(h, 2.0, 100.0) == 0.02 + 2.0, tt::tolerance(1e-12));
  BOOST_TEST(transfer_duration(h, 0.0, 0.0) == 0.01);
}

BOOST_FIXTURE_TEST_CASE(bandwidth_drop_slows_the_step, fixture) {
  const auto c = make_cluster(2, 1, 1, {0, inf}, {0, inf}, {20e-3, 1e9 / 8});
  const int layers = config.n_layer + 2;
  const auto pl = pipeline_plan_of(config, {{0}, {1}}, {0, 4, layers}, 2, 4, schedule_kind::zb_h1);
  const auto base = simulate(c, spec, profile, pl);
  const auto timeline = parse_link_timeline(R"([[change]]
at = "1ms"
between = ["r0", "r1"]
bandwidth = "50Mbps"
latency = 80
)",
                                            c, "t.toml");
  BOOST_TEST(timeline.changes().size() == 1u);
  BOOST_TEST(*timeline.changes()[0].bandwidth_Bps == 50e6 / 8);
  BOOST_TEST(*timeline.changes()[0].latency_s == 0.08, tt::tolerance(1e-12));
  const auto slow = simulate(c, spec, profile, pl, timeline);
  BOOST_TEST(slow.step_time_s > base.step_time_s);
  // Several steps: every step after the change is as slow as the first slow one.
  sim_options two;
  two.steps = 3;
  const auto steps = simulate(c, spec, profile, pl, timeline, two);
  BOOST_TEST(steps.step_times_s.size() == 3u);
  BOOST_TEST(steps.step_times_s[2] > base.step_time_s);
}

BOOST_AUTO_TEST_CASE(timeline_errors_name_file_and_line) {
  const auto c = make_cluster(2, 1, 1, {0, inf}, {0, inf}, {0, inf});
  const auto error = [&](const std::string& text) {
    try {
      parse_link_timeline(text, c, "t.toml");
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  BOOST_TEST(error("[[change]]\nat = 1\nbetween = [\"r0\", \"mars\"]\nbandwidth = \"1Gbps\"\n")
                 .find("t.toml:3: unknown region, node or device 'mars'") == 0);
  BOOST_TEST(
      error("[[change]]\nbetween = [\"r0\", \"r1\"]\nbandwidth = \"1Gbps\"\n").find("'at'") !=
      std::string::npos);
  BOOST_TEST(error("[[change]]\nat = 1\nbetween = [\"r0\", \"r1\"]\nbandwidth = 0\n")
                 .find("t.toml:4: 'bandwidth' must be positive") == 0);
  BOOST_TEST(error("[[change]]\nat = 1\nbetween = [\"r0\", \"r1\"]\n").find("must set") !=
             std::string::npos);
  BOOST_TEST(error("[[change]]\nat = 1\nbetween = [\"r0\", \"r1\"]\nspeed = 1\n")
                 .find("unknown key 'speed'") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(compression_cuts_link_bytes, fixture) {
  const auto c = make_cluster(2, 1, 1, {0, inf}, {0, inf}, {1e-3, 1e8});
  const int layers = config.n_layer + 2;
  const auto bytes_with = [&](compression comp) {
    const auto r = simulate(c, spec, profile,
                            pipeline_plan_of(config, {{0}, {1}}, {0, 4, layers}, 2, 3,
                                             schedule_kind::one_f_one_b, comp));
    double total = 0;
    for (const auto& l : r.links)
      total += l.bytes;
    return total;
  };
  const double none = bytes_with(compression::none);
  BOOST_TEST(none == 2.0 * 3 * double(spec.transfer_bytes(2, compression::none)));
  BOOST_TEST(bytes_with(compression::fp16) == none / 2);
  BOOST_TEST(bytes_with(compression::bf16) == none / 2);
  const double int8 = bytes_with(compression::int8);
  BOOST_TEST(int8 == 2.0 * 3 * double(spec.transfer_bytes(2, compression::int8)));
  BOOST_TEST(int8 < none / 3.9);
}

BOOST_FIXTURE_TEST_CASE(compression_costs_encode_and_decode_compute, fixture) {
  // Three stages, one device each in regions of their own: stage 1 decodes what stage 0
  // encodes and encodes what stage 2 decodes, in F; the gradients the other way, in B.
  const auto c = make_cluster(3, 1, 1, {0, inf}, {0, inf}, {1e-3, 1e8});
  const int layers = config.n_layer + 2;
  const auto stages_with = [&](compression comp) {
    return simulate(c, spec, profile,
                    pipeline_plan_of(config, {{0}, {1}, {2}}, {0, 3, 6, layers}, 2, 3,
                                     schedule_kind::one_f_one_b, comp))
        .stages[0];
  };
  const auto none = stages_with(compression::none);
  const auto& dev = c.devices[0];
  const double launch = profile.options().factors(dev.cls).launch_s;
  const double plain = double(spec.transfer_bytes(2, compression::none));
  for (auto comp : {compression::bf16, compression::int8}) {
    const auto with = stages_with(comp);
    const double packed = double(spec.transfer_bytes(2, comp));
    // int8 encodes in two passes (each row's maximum, then the scaled values).
    const double enc = comp == compression::int8
                           ? (2 * plain + packed) / dev.mem_bandwidth_Bps + 2 * launch
                           : (plain + packed) / dev.mem_bandwidth_Bps + launch;
    const double dec = (plain + packed) / dev.mem_bandwidth_Bps + launch;
    BOOST_TEST(enc == encode_s(dev, spec, comp, 2, profile), tt::tolerance(1e-12));
    BOOST_TEST(dec == decode_s(dev, spec, comp, 2, profile), tt::tolerance(1e-12));
    BOOST_TEST(with[0].f_s - none[0].f_s == enc, tt::tolerance(1e-6));
    BOOST_TEST(with[0].b_s - none[0].b_s == dec, tt::tolerance(1e-6));
    BOOST_TEST(with[1].f_s - none[1].f_s == enc + dec, tt::tolerance(1e-6));
    BOOST_TEST(with[1].b_s - none[1].b_s == enc + dec, tt::tolerance(1e-6));
    BOOST_TEST(with[2].f_s - none[2].f_s == dec, tt::tolerance(1e-6));
    BOOST_TEST(with[2].b_s - none[2].b_s == enc, tt::tolerance(1e-6));
    BOOST_TEST(with[0].w_s == none[0].w_s);
  }
  BOOST_TEST(encode_s(dev, spec, compression::none, 2, profile) == 0.0);
}

BOOST_FIXTURE_TEST_CASE(measured_codec_cost_replaces_the_roofline, fixture) {
  // A profile that measured int8 (not bf16) on the cluster's device kind: int8 passes cost
  // its seconds per fp32 byte, bf16 keeps the roofline, and the simulator charges them.
  const auto c = make_cluster(3, 1, 1, {0, inf}, {0, inf}, {1e-3, 1e8});
  const auto& dev = c.devices[0];
  measured_profile m;
  m.codecs.push_back({dev.kind, compression::int8, 2e-9, 5e-10, 0});
  const profile_table with_codec{spec, {}, m};
  const double plain = double(spec.transfer_bytes(2, compression::none));
  BOOST_TEST(encode_s(dev, spec, compression::int8, 2, with_codec) == plain * 2e-9,
             tt::tolerance(1e-12));
  BOOST_TEST(decode_s(dev, spec, compression::int8, 2, with_codec) == plain * 5e-10,
             tt::tolerance(1e-12));
  BOOST_TEST(encode_s(dev, spec, compression::bf16, 2, with_codec) ==
                 encode_s(dev, spec, compression::bf16, 2, profile),
             tt::tolerance(1e-12));
  BOOST_TEST(encode_s(dev, spec, compression::none, 2, with_codec) == 0.0);
  BOOST_TEST(encode_s(dev, spec, compression::int8, 0, with_codec) == 0.0);
  const int layers = config.n_layer + 2;
  const auto p = pipeline_plan_of(config, {{0}, {1}, {2}}, {0, 3, 6, layers}, 2, 3,
                                  schedule_kind::one_f_one_b, compression::int8);
  const auto measured = simulate(c, spec, with_codec, p).stages[0][1];
  const auto estimated = simulate(c, spec, profile, p).stages[0][1];
  const double enc = plain * 2e-9, dec = plain * 5e-10;
  const double roofline = encode_s(dev, spec, compression::int8, 2, profile) +
                          decode_s(dev, spec, compression::int8, 2, profile);
  BOOST_TEST(measured.f_s - estimated.f_s == enc + dec - roofline, tt::tolerance(1e-6));
  BOOST_TEST(measured.b_s - estimated.b_s == enc + dec - roofline, tt::tolerance(1e-6));
}

BOOST_FIXTURE_TEST_CASE(gpipe_holds_more_activations_than_1f1b, fixture) {
  const auto c = free_links_cluster(4);
  const auto cuts = even_cuts(config.n_layer + 2, 4);
  const auto run = [&](schedule_kind kind) {
    return simulate(c, spec, profile,
                    pipeline_plan_of(config, {{0}, {1}, {2}, {3}}, cuts, 2, 8, kind));
  };
  const auto gpipe = run(schedule_kind::gpipe);
  const auto one_f = run(schedule_kind::one_f_one_b);
  BOOST_TEST(gpipe.devices[0].peak_activation_bytes > one_f.devices[0].peak_activation_bytes);
  BOOST_TEST(gpipe.peak_bytes > one_f.peak_bytes);
  // 1F1B's first stage keeps p micro-batches' activations, GPipe's all m.
  const auto lc0 = profile.cost(c.devices[0], 0, 2);
  double act_b = 0;
  for (int l = cuts[0]; l < cuts[1]; ++l)
    act_b += double(profile.cost(c.devices[0], l, 2).act_until_b);
  (void)lc0;
  BOOST_TEST(gpipe.devices[0].peak_activation_bytes == 8 * act_b, tt::tolerance(1e-12));
  BOOST_TEST(one_f.devices[0].peak_activation_bytes == 4 * act_b, tt::tolerance(1e-12));
  BOOST_TEST(one_f.devices[0].state_bytes > 0);
}

BOOST_FIXTURE_TEST_CASE(a_recomputing_stage_keeps_inputs_and_runs_f_again_before_b, fixture) {
  const auto c = free_links_cluster(4);
  const auto cuts = even_cuts(config.n_layer + 2, 4);
  const auto plain =
      pipeline_plan_of(config, {{0}, {1}, {2}, {3}}, cuts, 2, 8, schedule_kind::one_f_one_b);
  auto with = plain;
  with.pipelines[0].stages[1].recompute = true;
  const auto a = simulate(c, spec, profile, plain);
  const auto r = simulate(c, spec, profile, with);
  // Stage 1 (blocks 2-3 of 6): B costs its F on top; F and W stay.
  BOOST_TEST(r.stages[0][1].f_s == a.stages[0][1].f_s);
  BOOST_TEST(r.stages[0][1].b_s == a.stages[0][1].b_s + a.stages[0][1].f_s, tt::tolerance(1e-12));
  BOOST_TEST(r.stages[0][1].w_s == a.stages[0][1].w_s);
  BOOST_TEST(r.stages[0][0].b_s == a.stages[0][0].b_s);
  BOOST_TEST(r.step_time_s > a.step_time_s);
  // 1F1B keeps 3 micro-batches on stage 1: their inputs [2, T, C] instead of their
  // activations, plus one micro-batch rebuilt while its B runs.
  double act_b = 0, act_w = 0;
  for (int l = cuts[1]; l < cuts[2]; ++l) {
    act_b += double(profile.cost(c.devices[1], l, 2).act_until_b);
    act_w += double(profile.cost(c.devices[1], l, 2).act_until_w);
  }
  const double input = 2.0 * double(spec.boundary_bytes_per_sample());
  BOOST_TEST(a.devices[1].peak_activation_bytes == 3 * act_b, tt::tolerance(1e-12));
  BOOST_TEST(r.devices[1].peak_activation_bytes == 3 * input + (act_b - input),
             tt::tolerance(1e-12));
  BOOST_TEST(r.devices[1].peak_activation_bytes < 0.6 * a.devices[1].peak_activation_bytes);
  BOOST_TEST(r.devices[0].peak_activation_bytes == a.devices[0].peak_activation_bytes);
  (void)act_w;
}

BOOST_FIXTURE_TEST_CASE(out_of_memory_is_flagged, fixture) {
  auto c = free_links_cluster(2);
  c.devices[1].memory_bytes = 1e6;
  const int layers = config.n_layer + 2;
  const auto r =
      simulate(c, spec, profile,
               pipeline_plan_of(config, {{0}, {1}}, {0, 4, layers}, 2, 4, schedule_kind::greedy));
  BOOST_TEST(r.out_of_memory);
  BOOST_TEST(!r.devices[0].out_of_memory);
  BOOST_TEST(r.devices[1].out_of_memory);
  BOOST_TEST(r.devices[1].memory_bytes == 1e6);
}

BOOST_FIXTURE_TEST_CASE(trace_has_a_track_per_device_and_link, fixture) {
  const auto c = make_cluster(2, 2, 2, {1e-5, 16e9}, {1e-4, 1e9}, {40e-3, 1e8});
  const int layers = config.n_layer + 2;
  // Two pipelines of two stages with two devices each: stage 0 in region 0, stage 1 in 1.
  auto pl = pipeline_plan_of(config, {{0, 1}, {4, 5}}, {0, 3, layers}, 4, 4, schedule_kind::zb_h1);
  pl.pipelines.push_back(
      pipeline_plan_of(config, {{2, 3}, {6, 7}}, {0, 3, layers}, 4, 4, schedule_kind::zb_h1)
          .pipelines[0]);
  sim_options options;
  options.trace = true;
  const auto r = simulate(c, spec, profile, pl, {}, options);
  std::ostringstream out;
  write_chrome_trace(r, c, out);
  const auto j = nlohmann::json::parse(out.str());
  std::set<int> device_tracks, link_tracks, named;
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      named.insert(e["tid"].get<int>());
    if (e["ph"] != "X")
      continue;
    const int tid = e["tid"].get<int>();
    (tid < 8 ? device_tracks : link_tracks).insert(tid);
    names.insert(e["name"].get<std::string>());
    BOOST_TEST(e["dur"].get<double>() >= 0);
  }
  BOOST_TEST(device_tracks.size() == 8u);
  BOOST_TEST(link_tracks.size() == r.links.size());
  BOOST_TEST(named.size() == 8u + r.links.size());
  for (const char* n : {"F3", "B3", "W3", "send act m3", "send grad m3", "optimizer"})
    BOOST_TEST(names.count(n) == 1u, n);
  bool allreduce = false;
  for (const auto& n : names)
    allreduce = allreduce || n.rfind("allreduce L", 0) == 0;
  BOOST_TEST(allreduce);
  // Without the option the result keeps no events.
  BOOST_TEST(simulate(c, spec, profile, pl).events.empty());
}

BOOST_FIXTURE_TEST_CASE(trace_covers_every_simulated_step_and_names_links_by_endpoints, fixture) {
  const auto c = make_cluster(2, 2, 2, {1e-5, 16e9}, {1e-4, 1e9}, {40e-3, 1e8});
  const int layers = config.n_layer + 2;
  // Data parallel over two pipelines (an all-reduce), each cut across the two regions.
  auto pl = pipeline_plan_of(config, {{0, 1}, {4, 5}}, {0, 3, layers}, 4, 4, schedule_kind::zb_h1);
  pl.pipelines.push_back(
      pipeline_plan_of(config, {{2, 3}, {6, 7}}, {0, 3, layers}, 4, 4, schedule_kind::zb_h1)
          .pipelines[0]);
  sim_options options;
  options.trace = true;
  options.steps = 3;
  const auto r = simulate(c, spec, profile, pl, {}, options);
  BOOST_TEST_REQUIRE(r.step_times_s.size() == 3u);
  std::ostringstream out;
  write_chrome_trace(r, c, out);
  const auto j = nlohmann::json::parse(out.str());
  // Step k spans [ends[k-1], ends[k]) (steps run back to back).
  std::vector<double> ends{0};
  for (double t : r.step_times_s)
    ends.push_back(ends.back() + t);
  const auto step_of = [&](double ts_us) {
    for (size_t k = 1; k < ends.size(); ++k)
      if (ts_us < ends[k] * 1e6 - 1e-3)
        return static_cast<int>(k) - 1;
    return -1;
  };
  // Per step: the optimizer on each of the 8 devices, an all-reduce, ops and transfers.
  std::vector<int> optimizers(3), allreduces(3), ops(3), transfers(3);
  std::set<std::string> device_names, link_names;
  for (const auto& d : c.devices)
    device_names.insert(d.name);
  for (const auto& reg : c.regions)
    device_names.insert(reg.name);
  for (const auto& e : j["traceEvents"]) {
    const auto name = e["name"].get<std::string>();
    if (e["ph"] == "M" && name == "thread_name") {
      const auto track = e["args"]["name"].get<std::string>();
      if (track.rfind("link ", 0) == 0)
        link_names.insert(track);
      continue;
    }
    if (e["ph"] != "X")
      continue;
    const int k = step_of(e["ts"].get<double>());
    BOOST_TEST_REQUIRE(k >= 0, name << " at " << e["ts"] << " us is after the last step");
    if (name == "optimizer")
      ++optimizers[size_t(k)];
    else if (name.rfind("allreduce L", 0) == 0)
      ++allreduces[size_t(k)];
    else if (name.rfind("send ", 0) == 0)
      ++transfers[size_t(k)];
    else
      ++ops[size_t(k)];
  }
  for (int k = 0; k < 3; ++k) {
    BOOST_TEST(optimizers[size_t(k)] == 8, "step " << k);
    BOOST_TEST(allreduces[size_t(k)] > 0, "step " << k);
    BOOST_TEST(ops[size_t(k)] == ops[0], "step " << k);
    BOOST_TEST(transfers[size_t(k)] > 0, "step " << k);
  }
  // Every link's row is "link A -> B", A and B devices or regions as the cluster names them.
  BOOST_TEST_REQUIRE(link_names.size() == r.links.size());
  for (const auto& n : link_names) {
    const auto arrow = n.find(" -> ");
    BOOST_TEST_REQUIRE(arrow != std::string::npos, n);
    BOOST_TEST(device_names.count(n.substr(5, arrow - 5)) == 1u, n);
    BOOST_TEST(device_names.count(n.substr(arrow + 4)) == 1u, n);
  }
}

BOOST_FIXTURE_TEST_CASE(deterministic, fixture) {
  const auto c = make_cluster(2, 2, 2, {1e-5, 16e9}, {1e-4, 1e9}, {40e-3, 1e8});
  const int layers = config.n_layer + 2;
  const auto pl = pipeline_plan_of(config, {{0, 1, 2}, {4, 5}, {6, 7}}, {0, 2, 5, layers}, 6, 5,
                                   schedule_kind::greedy, compression::int8);
  sim_options options;
  options.trace = true;
  options.steps = 2;
  const auto a = simulate(c, spec, profile, pl, {}, options);
  const auto b = simulate(c, spec, profile, pl, {}, options);
  BOOST_TEST(a.step_times_s == b.step_times_s);
  BOOST_TEST(a.events.size() == b.events.size());
  for (size_t k = 0; k < a.events.size(); ++k)
    BOOST_TEST((a.events[k].name == b.events[k].name &&
                a.events[k].start_s == b.events[k].start_s &&
                a.events[k].track == b.events[k].track));
  BOOST_TEST(a.step_times_s[0] == a.step_times_s[1], tt::tolerance(1e-9));
  for (const auto& st : a.stages[0])
    BOOST_TEST((st.bubble_ratio >= 0 && st.bubble_ratio < 1));
  BOOST_TEST(a.samples_per_s == 30 / a.step_time_s, tt::tolerance(1e-9));
}

BOOST_FIXTURE_TEST_CASE(rejects_plans_that_do_not_fit, fixture) {
  const auto c = free_links_cluster(2);
  auto pl =
      pipeline_plan_of(config, {{0}, {5}}, {0, 2, config.n_layer + 2}, 2, 2, schedule_kind::gpipe);
  BOOST_CHECK_THROW(simulate(c, spec, profile, pl), input_error);
  pl = pipeline_plan_of(small_model(3), {{0}, {1}}, {0, 2, 5}, 2, 2, schedule_kind::gpipe);
  BOOST_CHECK_THROW(simulate(c, spec, profile, pl), input_error);
}

BOOST_FIXTURE_TEST_CASE(a_device_on_another_node_than_its_stage_pays_a_round_trip_per_op, fixture) {
  // One stage on two devices with the same links between them: on one node, or each on its
  // own. Apart, each op's work goes to device 1 and its answer comes back (2 alpha), and
  // nothing else changes (the stage and the coordinator stay on device 0's node).
  const double alpha = 2e-3, bw = 1e9;
  const auto one = make_cluster(1, 1, 2, {alpha, bw}, {alpha, bw}, {0, inf});
  const auto two = make_cluster(1, 2, 1, {alpha, bw}, {alpha, bw}, {0, inf});
  const int layers = config.n_layer + 2;
  const auto pl = pipeline_plan_of(config, {{0, 1}}, {0, layers}, 4, 2, schedule_kind::one_f_one_b);
  sim_options traced;
  traced.trace = true;
  const auto together = simulate(one, spec, profile, pl, {}, traced);
  const auto apart = simulate(two, spec, profile, pl, {}, traced);
  int ops = 0;
  for (const auto& e : apart.events)
    if (e.track == 0 && e.name != "optimizer" && e.name.rfind("allreduce", 0) != 0)
      ++ops;
  BOOST_TEST(ops == 6); // F, B, W of two micro-batches
  BOOST_TEST(apart.devices[1].allreduce_s == together.devices[1].allreduce_s, tt::tolerance(1e-9));
  BOOST_TEST(apart.step_time_s == together.step_time_s + ops * 2 * alpha, tt::tolerance(1e-9));
}

BOOST_FIXTURE_TEST_CASE(a_slowed_device_stretches_its_ops_from_its_step_on, fixture) {
  const auto c = make_cluster(1, 2, 1, {0, inf}, {1e-3, 1e9}, {0, inf});
  const int layers = config.n_layer + 2;
  const auto pl = pipeline_plan_of(config, {{0}, {1}}, {0, 4, layers}, 2, 4, schedule_kind::gpipe);
  sim_options three;
  three.steps = 3;
  const auto base = simulate(c, spec, profile, pl, {}, three);
  const auto slow = simulate(c, spec, profile, pl,
                             parse_link_timeline("[[device]]\nstep = 2\ndevice = \"r0n1/0\"\n"
                                                 "slowdown = 3\n",
                                                 c, "s.toml"),
                             three);
  // The first step is untouched; from the second on the second stage's F, B and W take 3x as long.
  BOOST_TEST(slow.step_times_s[0] == base.step_times_s[0]);
  BOOST_TEST(slow.step_times_s[1] > 1.5 * base.step_times_s[1]);
  BOOST_TEST(slow.step_times_s[2] == slow.step_times_s[1], tt::tolerance(1e-9));
  // Only compute stretches: 2 extra op times per op of stage 1, 4 micro-batches.
  const auto& st = base.stages[0][1];
  BOOST_TEST(slow.step_times_s[1] - base.step_times_s[1] >= 2 * 4 * (st.f_s + st.b_s) * 0.99);
}

BOOST_FIXTURE_TEST_CASE(a_stop_waits_for_the_resume_and_a_kill_stops_the_job, fixture) {
  const auto c = make_cluster(1, 2, 1, {0, inf}, {1e-3, 1e9}, {0, inf});
  const int layers = config.n_layer + 2;
  const auto pl = pipeline_plan_of(config, {{0}, {1}}, {0, 4, layers}, 2, 4, schedule_kind::gpipe);
  const auto base = simulate(c, spec, profile, pl);
  const double pause = 0.25; // several steps, written exactly
  BOOST_TEST(pause > 2 * base.step_time_s);
  const auto stopped = simulate(
      c, spec, profile, pl,
      parse_link_timeline("[[node]]\nat = 0\nnode = \"r0n0\"\naction = \"stop\"\n"
                          "[[node]]\nat = " +
                              std::to_string(pause) + "\nnode = \"r0n0\"\naction = \"resume\"\n",
                          c, "s.toml"));
  BOOST_TEST(stopped.step_time_s == base.step_time_s + pause, tt::tolerance(1e-6));
  const auto killed =
      parse_link_timeline("[[node]]\nstep = 2\nnode = \"r0n1\"\naction = \"kill\"\n", c, "s.toml");
  BOOST_TEST(simulate(c, spec, profile, pl, killed).step_time_s == base.step_time_s);
  sim_options two;
  two.steps = 2;
  try {
    simulate(c, spec, profile, pl, killed, two);
    BOOST_FAIL("a killed node must stop the job");
  } catch (const job_stopped& e) {
    BOOST_TEST(std::string(e.what()).find("node r0n1 was killed at") == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
