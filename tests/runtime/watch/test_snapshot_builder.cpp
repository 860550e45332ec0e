#include "runtime/watch/snapshot_builder.hpp"

#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;

namespace {

/// One pipeline of two stages on actors_test_cluster: c0/0 and c0/1 (3 and 1 samples of
/// each micro-batch), then e0/0 across the WAN, activations sent as fp16.
plan two_stage_plan() {
  plan p;
  p.strategy = "deepcee";
  p.micro_batch_size = 4;
  pipeline_plan pipe;
  pipe.micro_batches = 2;
  pipe.stages = {{{0, 1}, {3, 1}, 0, 2, compression::fp16}, {{4}, {4}, 2, 4, compression::none}};
  p.pipelines = {pipe};
  return p;
}

/// Each device of the plan at 1 GB per layer it holds: what the simulator's estimate gives the
/// builder (its memory need, and its pipeline and stage).
sim_result layer_memory(const plan& p) {
  sim_result r;
  for (size_t k = 0; k < p.pipelines.size(); ++k)
    for (size_t s = 0; s < p.pipelines[k].stages.size(); ++s) {
      const auto& st = p.pipelines[k].stages[s];
      for (int d : st.devices)
        r.devices.push_back({.device = d,
                             .pipeline = int(k),
                             .stage = int(s),
                             .peak_bytes = 1e9 * (st.last_layer - st.first_layer)});
    }
  return r;
}

snapshot_builder make_builder(const std::string& time_mode = "virtual") {
  return snapshot_builder({"job-a", "tiny", time_mode, {"network group 0: c0"}, 40},
                          two_stage_plan(), deepcee::test::actors_test_cluster(), layer_memory);
}

step_facts step_three() {
  step_facts f;
  f.step = 3;
  f.loss = 2.5;
  f.start_s = 1.0;
  f.end_s = 2.0;
  f.compute_end_s = 1.8;
  f.real_s = 0.5;
  f.stage_ops = {{{"B", 0, 1.4, 1.6}, {"F", 0, 1.0, 1.2}},
                 {{"F", 0, 1.2, 1.4}, {"W", 0, 1.6, 1.8}}};
  f.links = {{.from = 0,
              .to = 4,
              .assumed = {.latency_s = 0.04, .bandwidth_Bps = 100e6 / 8},
              .estimated = {.latency_s = 0.05, .bandwidth_Bps = 1e6},
              .samples = 9,
              .drifted = true,
              .carried = {.transfers = 10, .bytes = 1e6}}};
  f.dropped_messages = 1;
  return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshot_builder_tests)

BOOST_AUTO_TEST_CASE(initial_holds_the_plan_the_allocation_and_the_devices) {
  const auto s = make_builder().initial();
  BOOST_TEST(s.job == "job-a");
  BOOST_TEST(s.cluster == "actors-test");
  BOOST_TEST(s.strategy == "deepcee");
  BOOST_TEST(s.steps == 40);
  BOOST_TEST(s.step == 0);
  BOOST_TEST(!s.loss);
  BOOST_REQUIRE(s.stages.size() == 2u);
  BOOST_TEST(s.stages[0].devices == (std::vector<std::string>{"c0/0", "c0/1"}),
             boost::test_tools::per_element());
  BOOST_TEST(s.stages[1].first_layer == 2);
  BOOST_TEST(s.allocation.micro_batches == std::vector<int>{2}, boost::test_tools::per_element());
  BOOST_REQUIRE(s.allocation.samples.size() == 3u);
  BOOST_TEST(s.allocation.samples[1].device == "c0/1");
  BOOST_TEST(s.allocation.samples[1].samples == 1);
  BOOST_REQUIRE(s.allocation.compression.size() == 2u);
  BOOST_TEST(s.allocation.compression[0].link == "c0/0 -> e0/0");
  BOOST_TEST(s.allocation.compression[1].link == "c0/1 -> e0/0");
  BOOST_TEST(s.allocation.compression[0].compression == "fp16");
  BOOST_REQUIRE(s.devices.size() == 7u);
  BOOST_TEST(s.devices[0].memory_used_bytes == 2e9);
  BOOST_TEST(s.devices[0].memory_capacity_bytes > 2e9);
  BOOST_TEST(s.devices[2].pipeline == -1); // c0/2: not in the plan
  BOOST_TEST(s.devices[4].stage == 1);
  BOOST_TEST(make_builder().initial(17).step == 17);
}

BOOST_AUTO_TEST_CASE(a_step_gives_timelines_bubbles_utilization_and_rates) {
  auto b = make_builder();
  const auto s = b.after_step(step_three());
  BOOST_TEST(s.step == 3);
  BOOST_TEST(*s.loss == 2.5);
  BOOST_TEST(s.clock_s == 2.0);
  BOOST_TEST(*s.emulated_samples_per_s == 8.0); // 2 micro-batches of 4 in 1 s
  BOOST_TEST(*s.real_samples_per_s == 16.0);    // in 0.5 s of real time
  BOOST_TEST(s.stages[0].ops[0].kind == "F");   // in start order
  BOOST_TEST(s.stages[0].bubble == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.devices[0].utilization == 0.4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.devices[4].utilization == 0.4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.devices[2].utilization == 0.0);
  BOOST_REQUIRE(s.links.size() == 1u);
  const auto& l = s.links[0];
  BOOST_TEST(l.name == "c0/0 -> e0/0");
  BOOST_TEST(l.bandwidth_Bps == 1e6); // the adapter's estimates, as they are
  BOOST_TEST(l.latency_s == 0.05);
  BOOST_TEST(l.plan_bandwidth_Bps == 100e6 / 8);
  BOOST_TEST(l.plan_latency_s == 0.04);
  BOOST_TEST(l.samples == 9);
  BOOST_TEST(l.drifted);
  BOOST_TEST(l.transfers == 10);
  BOOST_TEST(l.bytes_sent == 1e6);
  BOOST_TEST(s.dropped_messages == 1);
  BOOST_TEST(s.decisions.empty());
  BOOST_TEST(s.events.empty());
}

BOOST_AUTO_TEST_CASE(history_and_validation_carry_over_steps) {
  auto b = make_builder();
  auto f = step_three();
  b.after_step(f);
  b.validated(3, 2.75);
  BOOST_TEST(*b.latest().val_loss == 2.75);
  BOOST_TEST(b.latest().step == 3);
  f.step = 4;
  f.loss = 2.25;
  const auto s = b.after_step(f);
  BOOST_TEST(s.loss_history == (std::vector<double>{2.5, 2.25}), boost::test_tools::per_element());
  BOOST_TEST(*s.val_loss == 2.75);
  BOOST_TEST(s.val_step == 3);
  for (int k = 0; k < 200; ++k)
    b.after_step(f);
  BOOST_TEST(b.after_step(f).loss_history.size() == snapshot_builder::history);
}

BOOST_AUTO_TEST_CASE(wall_time_has_no_emulated_rate_and_dry_time_no_loss) {
  auto wall = make_builder("wall");
  const auto w = wall.after_step(step_three());
  BOOST_TEST(!w.emulated_samples_per_s);
  BOOST_TEST(*w.real_samples_per_s == 8.0); // the step's own clock is real
  auto dry = make_builder("dry");
  auto f = step_three();
  f.loss.reset();
  const auto d = dry.after_step(f);
  BOOST_TEST(!d.loss);
  BOOST_TEST(d.loss_history.empty());
}

BOOST_AUTO_TEST_CASE(a_rebalance_shows_from_the_step_it_ran) {
  auto b = make_builder("virtual");
  auto f = step_three();
  const auto before = b.after_step(f);
  BOOST_TEST(before.allocation.samples[0].samples == 3);
  BOOST_TEST(before.allocation.compression[0].compression == "fp16");
  auto p = two_stage_plan();
  p.pipelines[0].stages[0].samples = {1, 3};
  p.pipelines[0].stages[0].send_compression = compression::int8;
  b.plan_in_force(p);
  f.step = 4;
  const auto after = b.after_step(f);
  BOOST_TEST(after.allocation.micro_batches == (std::vector<int>{2}),
             boost::test_tools::per_element());
  BOOST_TEST(after.allocation.samples[0].samples == 1);
  BOOST_TEST(after.allocation.samples[1].samples == 3);
  BOOST_TEST(after.allocation.compression[0].compression == "int8");
  BOOST_TEST(after.stages.size() == 2u); // the same layout
}

BOOST_AUTO_TEST_CASE(a_replan_shows_its_stages_devices_and_utilization) {
  auto b = make_builder("virtual");
  b.after_step(step_three());
  // Data parallel on e0/0 and e0/1 (devices 4 and 5): c0/0 and c0/1 run nothing now.
  plan p;
  p.strategy = "re-planned";
  p.micro_batch_size = 4;
  pipeline_plan pipe;
  pipe.micro_batches = 2;
  pipe.stages = {{{4, 5}, {2, 2}, 0, 4, compression::none}};
  p.pipelines = {pipe};
  b.plan_in_force(p);
  auto f = step_three();
  f.step = 4;
  f.stage_ops = {{{"F", 0, 1.0, 1.5}, {"B", 0, 1.5, 1.9}}};
  const auto s = b.after_step(f);
  BOOST_TEST(s.strategy == "re-planned");
  BOOST_REQUIRE(s.stages.size() == 1u);
  BOOST_TEST(s.stages[0].devices == (std::vector<std::string>{"e0/0", "e0/1"}),
             boost::test_tools::per_element());
  BOOST_TEST(s.stages[0].last_layer == 4);
  BOOST_TEST(s.devices[0].pipeline == -1); // c0/0 left out
  BOOST_TEST(s.devices[0].utilization == 0.0);
  BOOST_TEST(s.devices[0].memory_used_bytes == 0.0);
  BOOST_TEST(s.devices[4].pipeline == 0);
  BOOST_TEST(s.devices[4].memory_used_bytes == 4e9);
  BOOST_TEST(s.devices[5].utilization == 0.9, boost::test_tools::tolerance(1e-12));
  BOOST_REQUIRE(s.allocation.samples.size() == 2u);
  BOOST_TEST(s.allocation.samples[1].device == "e0/1");
  BOOST_TEST(s.allocation.compression.empty());
}

BOOST_AUTO_TEST_CASE(the_history_covers_every_step_and_validation) {
  auto b = make_builder("virtual");
  BOOST_TEST(!b.initial().history); // nothing before the first step
  auto f = step_three();
  for (int k = 1; k <= 30; ++k) {
    f.step = k;
    f.loss = 5.0 - 0.1 * k;
    b.after_step(f);
    if (k % 10 == 0)
      b.validated(k, 6.0 - 0.1 * k);
  }
  const auto& h = *b.latest().history;
  BOOST_REQUIRE(h.loss.points().size() == 30u);
  BOOST_TEST(h.loss.points().front().step == 1);
  BOOST_TEST(h.loss.points().back().value == 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(h.validation.points().size() == 3u);
  BOOST_TEST(h.emulated_samples_per_s.points().size() == 30u);
  BOOST_TEST(h.link_bandwidth_Bps.at("c0/0 -> e0/0").points().size() == 30u);
}

BOOST_AUTO_TEST_CASE(events_and_decisions_carry_over_steps_and_keep_the_latest) {
  auto b = make_builder("virtual");
  b.injected({2, 1.5, "link cloud<->edge bandwidth x0.1"});
  b.decided({2, "rebalance", "edge link drifted", 0.4});
  const auto s = b.after_step(step_three());
  BOOST_TEST(s.events.size() == 1u);
  BOOST_TEST(s.events[0].text == "link cloud<->edge bandwidth x0.1");
  BOOST_TEST(s.decisions.size() == 1u);
  BOOST_TEST(s.decisions[0].kind == "rebalance");
  for (int k = 0; k < 60; ++k)
    b.injected({3, double(k), "event " + std::to_string(k)});
  BOOST_TEST(b.latest().events.size() == snapshot_builder::recent);
  BOOST_TEST(b.latest().events.front().text == "event 10");
  BOOST_TEST(b.latest().events.back().text == "event 59");
  BOOST_TEST(b.latest().events_total == 61);
  BOOST_TEST(b.latest().decisions_by_kind.at("rebalance") == 1);
}

BOOST_AUTO_TEST_SUITE_END()
