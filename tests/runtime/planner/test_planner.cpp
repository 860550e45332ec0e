#include "runtime/base/errors.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/plan_estimate.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace deepcee::runtime;

namespace {

planner_report run(const cluster& c, const std::string& model, int batch = 0) {
  profile_table profiles(make_model_spec(*model_preset(model), model));
  planner_options o;
  o.model_name = model;
  o.global_batch = batch;
  o.source = "test-cluster";
  return plan_training(c, profiles, o);
}

/// The fastest baseline row; `all_devices_only` keeps the baselines (every device
/// in config order) and leaves the single-group variants out.
double best_baseline(const planner_report& r, bool all_devices_only = false) {
  double best = 0;
  for (const auto& row : r.strategies)
    if (row.strategy != "deepcee" && row.chosen && !row.sim.out_of_memory &&
        (!all_devices_only || row.restricted_devices.empty()))
      best = std::max(best, row.sim.samples_per_s);
  return best;
}

/// Every issue-3 target that a scenario carries: a valid plan, no out-of-memory, at least
/// every baseline's simulated throughput (single-group variants included), and `factor`
/// times the best of the all-device baselines.
void check_scenario(const std::string& name, const std::string& model, double factor,
                    bool has_smaller_group = true) {
  BOOST_TEST_CONTEXT(name << " " << model) {
    cluster c = load_cluster(deepcee::test::cluster_file(name));
    planner_report r = run(c, model);
    validate_plan(r.best, static_cast<int>(c.devices.size()), name);
    BOOST_TEST(r.best.strategy == "deepcee");
    BOOST_TEST(!r.best_sim.out_of_memory);
    // The four baselines over every device, each followed by its best variant on
    // one network group or region when a smaller one can hold the model, then deepcee.
    const size_t per_baseline = has_smaller_group ? 2 : 1;
    BOOST_REQUIRE(r.strategies.size() == 4 * per_baseline + 1);
    BOOST_TEST(r.strategies.back().strategy == "deepcee");
    for (size_t i = 0; i + 1 < r.strategies.size(); ++i) {
      const auto& row = r.strategies[i];
      const bool restricted = i % per_baseline == 1;
      BOOST_TEST(row.restricted_devices.empty() == !restricted, row.strategy);
      BOOST_TEST(row.baseline == r.strategies[i - i % per_baseline].strategy);
      if (restricted && row.chosen) {
        BOOST_TEST(row.strategy == row.baseline + " (" + row.restricted_to + " only)");
        validate_plan(*row.chosen, static_cast<int>(c.devices.size()), row.strategy);
        const auto& only = row.restricted_devices;
        BOOST_TEST(only.size() < c.devices.size());
        for (const auto& pp : row.chosen->pipelines)
          for (const auto& st : pp.stages)
            for (int d : st.devices)
              BOOST_TEST(std::count(only.begin(), only.end(), d) == 1);
      }
    }
    BOOST_REQUIRE(r.best_baseline >= 0);
    BOOST_TEST(r.strategies[size_t(r.best_baseline)].sim.samples_per_s == best_baseline(r));
    for (const auto& row : r.strategies)
      if (row.chosen)
        BOOST_TEST(r.best_sim.samples_per_s >= row.sim.samples_per_s,
                   row.strategy << " " << row.sim.samples_per_s << " > deepcee "
                                << r.best_sim.samples_per_s);
    // The 1.3x target is against its baselines, which span every device; against
    // the baselines on one group alone deepcee only has to win or tie.
    BOOST_TEST(r.best_sim.samples_per_s >= factor * best_baseline(r, true));
    BOOST_TEST(r.best_sim.samples_per_s >= best_baseline(r));
    BOOST_TEST(r.plans_simulated > 0);
    BOOST_TEST(r.search_s < 10.0);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner)

BOOST_AUTO_TEST_CASE(testbed_beats_every_baseline_by_1_3x) {
  check_scenario("deepcee-testbed", "gpt2-124m", 1.3);
  check_scenario("deepcee-testbed", "gpt2-355m", 1.3);
}

BOOST_AUTO_TEST_CASE(testbed_at_500mbps_beats_every_baseline) {
  check_scenario("deepcee-testbed-500mbps", "gpt2-124m", 1.0);
}

BOOST_AUTO_TEST_CASE(cee_mixed_beats_every_baseline_by_1_3x) {
  check_scenario("cee-mixed", "gpt2-355m", 1.3);
}

BOOST_AUTO_TEST_CASE(datacenter_mixed_beats_every_baseline) {
  // One region, one network group: no restricted rows.
  check_scenario("datacenter-mixed", "gpt2-355m", 1.0, false);
}

BOOST_AUTO_TEST_CASE(dp_on_the_testbeds_cloud_alone_is_much_faster_than_across_the_wan) {
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report r = run(c, "gpt2-124m", 64);
  auto row = [&](const std::string& base, bool restricted) {
    auto it = std::find_if(r.strategies.begin(), r.strategies.end(), [&](const auto& s) {
      return s.baseline == base && s.restricted_devices.empty() != restricted;
    });
    BOOST_REQUIRE(it != r.strategies.end());
    BOOST_REQUIRE(it->chosen);
    return *it;
  };
  strategy_result all = row("dp", false), alone = row("dp", true);
  BOOST_TEST(alone.strategy == "dp (cloud only)");
  BOOST_TEST(!alone.sim.out_of_memory);
  BOOST_TEST(alone.sim.samples_per_s > 5 * all.sim.samples_per_s,
             alone.sim.samples_per_s << " vs " << all.sim.samples_per_s);
  BOOST_TEST(r.best_sim.samples_per_s >= alone.sim.samples_per_s);
}

namespace {
/// The regions the devices of a plan lie in.
std::set<int> regions_of(const cluster& c, const plan& p) {
  std::set<int> out;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      for (int d : st.devices)
        out.insert(c.devices.at(size_t(d)).region);
  return out;
}
} // namespace

// The default job's cluster (configs/default.toml): for the small model at batch 32 the
// planner's own plan spans the edge and the end site and beats the best plan on either
// site alone by 1.3x (docs/results.md, "The default job"); over a 40 ms link it keeps to one site.
BOOST_AUTO_TEST_CASE(the_default_jobs_plan_spans_both_sites_because_it_pays) {
  const auto file = deepcee::test::cluster_file("edge-end");
  cluster c = load_cluster(file);
  planner_report r = run(c, "small", 32);
  validate_plan(r.best, static_cast<int>(c.devices.size()), "edge-end");
  BOOST_TEST(regions_of(c, r.best).size() == 2u);
  BOOST_TEST(r.best.excluded.empty());
  BOOST_TEST(r.best_sim.samples_per_s >= 1.3 * best_baseline(r),
             r.best_sim.samples_per_s << " vs " << best_baseline(r));

  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  std::string wan = text.str();
  const std::string near = "latency = \"10ms\"";
  const auto at = wan.find(near);
  BOOST_REQUIRE(at != std::string::npos);
  wan.replace(at, near.size(), "latency = \"40ms\"");
  cluster far = parse_cluster(wan, "edge-end-40ms");
  planner_report f = run(far, "small", 32);
  BOOST_TEST(regions_of(far, f.best).size() == 1u);
  BOOST_TEST(f.best_sim.samples_per_s < r.best_sim.samples_per_s);
}

BOOST_AUTO_TEST_CASE(a_device_behind_a_very_slow_link_is_excluded_with_a_reason) {
  cluster c = deepcee::test::slow_corner_cluster();
  planner_report r = run(c, "gpt2-124m", 64);
  int far = *c.find_device("x/0");
  auto it = std::find_if(r.best.excluded.begin(), r.best.excluded.end(),
                         [&](const excluded_device& e) { return e.device == far; });
  BOOST_REQUIRE(it != r.best.excluded.end());
  BOOST_TEST(it->reason.find("Mbps") != std::string::npos, it->reason);
  for (const auto& pp : r.best.pipelines)
    for (const auto& st : pp.stages)
      BOOST_TEST(std::count(st.devices.begin(), st.devices.end(), far) == 0);
}

BOOST_AUTO_TEST_CASE(memory_limits_hold_for_a_model_that_needs_a_pipeline) {
  // gpt2-1.5b's state (about 26 GB with the untied head) does not fit one 24 GB card, so
  // every device must hold only part of the model.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report r = run(c, "gpt2-1.5b", 64);
  BOOST_TEST(!r.best_sim.out_of_memory);
  for (const auto& d : r.best_sim.devices)
    BOOST_TEST(d.peak_bytes <= d.memory_bytes);
}

BOOST_AUTO_TEST_CASE(a_model_larger_than_the_cluster_is_an_input_error_with_sizes) {
  cluster c = deepcee::test::one_t4_cluster();
  try {
    run(c, "7b", 8);
    BOOST_FAIL("expected input_error");
  } catch (const input_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("test-cluster") != std::string::npos, what);
    BOOST_TEST(what.find("needs") != std::string::npos, what);
    BOOST_TEST(what.find("in total") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(a_negative_batch_is_an_input_error) {
  cluster c = load_cluster(deepcee::test::cluster_file("cee-small"));
  BOOST_CHECK_THROW(run(c, "gpt2-124m", -4), input_error);
}

BOOST_AUTO_TEST_CASE(the_search_is_deterministic) {
  cluster c = load_cluster(deepcee::test::cluster_file("cee-small"));
  planner_report a = run(c, "gpt2-124m", 64);
  planner_report b = run(c, "gpt2-124m", 64);
  BOOST_TEST(plan_to_json(a.best) == plan_to_json(b.best));
  BOOST_TEST(a.plans_estimated == b.plans_estimated);
}

BOOST_AUTO_TEST_CASE(no_simulated_step_is_shorter_than_its_compute_bound) {
  // The planner skips a greedy variant whose compute bound already loses to the best step:
  // that is right only if no schedule ever beats the bound.
  for (const char* name : {"deepcee-testbed", "cee-small"}) {
    cluster c = load_cluster(deepcee::test::cluster_file(name));
    planner_report r = run(c, "gpt2-124m", 64);
    profile_table profiles(make_model_spec(r.best.model, "gpt2-124m"));
    cost_cache costs(c, profiles);
    int checked = 0;
    for (const auto& row : r.strategies) {
      if (!row.chosen)
        continue;
      for (schedule_kind kind :
           {row.chosen->pipelines.front().schedule, schedule_kind::greedy, schedule_kind::zb_h2}) {
        plan p = *row.chosen;
        for (auto& pp : p.pipelines)
          pp.schedule = kind;
        const sim_result s = simulate(c, profiles.model(), profiles, p);
        BOOST_TEST(compute_bound_s(costs, p) <= s.step_time_s * (1 + 1e-9),
                   name << " " << row.strategy << " " << to_string(kind));
        ++checked;
      }
    }
    BOOST_TEST(checked >= 9);
  }
}

BOOST_AUTO_TEST_CASE(estimates_count_the_compression_compute_as_the_simulator_does) {
  // Every stage of a multi-stage baseline plan sends int8: the estimate's F and B of each
  // stage grow by the encode and decode passes, exactly as the simulator's do.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  planner_report r = run(c, "gpt2-124m", 64);
  profile_table profiles(make_model_spec(r.best.model, "gpt2-124m"));
  cost_cache costs(c, profiles);
  int checked = 0;
  for (const auto& row : r.strategies) {
    if (!row.chosen || row.chosen->pipelines.front().stages.size() < 2)
      continue;
    plan p = *row.chosen, none = *row.chosen;
    for (auto* q : {&p, &none})
      for (auto& pp : q->pipelines)
        for (auto& st : pp.stages)
          st.send_compression = q == &p ? compression::int8 : compression::none;
    const auto plain = pipeline_costs(costs, none, 0, link_model::real);
    const auto est = pipeline_costs(costs, p, 0, link_model::real);
    const auto sim = pipeline_stage_costs(c, profiles, p, 0);
    BOOST_REQUIRE(est.size() == sim.size());
    for (size_t s = 0; s < est.size(); ++s) {
      BOOST_TEST(est[s].f == sim[s].f, boost::test_tools::tolerance(1e-9));
      BOOST_TEST(est[s].b == sim[s].b, boost::test_tools::tolerance(1e-9));
      BOOST_TEST(est[s].f > plain[s].f, row.strategy << " stage " << s);
      BOOST_TEST(est[s].b > plain[s].b, row.strategy << " stage " << s);
      BOOST_TEST(est[s].w == plain[s].w);
      ++checked;
    }
  }
  BOOST_TEST(checked >= 2);
}

BOOST_AUTO_TEST_CASE(re_encoding_a_plan_equals_building_it_with_the_encodings) {
  // The search builds one layer split per schedule and re-encodes it (with_encodings): that
  // must be the plan build_plan gives for those encodings, hops and micro-batch counts too.
  cluster c = load_cluster(deepcee::test::cluster_file("deepcee-testbed"));
  profile_table profiles(make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m"));
  cost_cache costs(c, profiles);
  // Two pipelines over both cloud nodes (a hop between nodes) and on to an edge node (a hop
  // across regions), one micro-batch of 4.
  std::vector<pipeline_layout> layout{{{{0, 1}, {4, 5}, {8}}}, {{{2, 3}, {6, 7}, {9}}}};
  build_options o;
  o.micro_batch_size = 4;
  const auto base = build_plan(costs, layout, 64, o);
  BOOST_REQUIRE(base.has_value());
  int compressed = 0;
  for (auto cross : {compression::none, compression::bf16, compression::int8})
    for (auto inter : {compression::none, compression::int8}) {
      build_options e = o;
      e.cross_region = cross;
      e.inter_node = inter;
      const auto built = build_plan(costs, layout, 64, e);
      BOOST_REQUIRE(built.has_value());
      const plan again = with_encodings(costs, *base, 64, e);
      for (size_t pi = 0; pi < built->pipelines.size(); ++pi) {
        const auto& a = built->pipelines[pi];
        const auto& b = again.pipelines[pi];
        BOOST_TEST(a.micro_batches == b.micro_batches);
        for (size_t s = 0; s < a.stages.size(); ++s) {
          BOOST_TEST(a.stages[s].first_layer == b.stages[s].first_layer);
          BOOST_TEST(a.stages[s].samples == b.stages[s].samples);
          BOOST_TEST((a.stages[s].send_compression == b.stages[s].send_compression));
          compressed += b.stages[s].send_compression != compression::none;
        }
      }
      BOOST_TEST((again.pipelines[0].stages[0].send_compression == inter));
      BOOST_TEST((again.pipelines[0].stages[1].send_compression == cross));
    }
  BOOST_TEST(compressed > 0);
}

BOOST_AUTO_TEST_CASE(default_batch_is_half_a_million_tokens) {
  BOOST_TEST(default_global_batch(*model_preset("gpt2-124m")) == 512);
  BOOST_TEST(default_global_batch(*model_preset("7b")) == 256);
}

BOOST_AUTO_TEST_SUITE_END()
