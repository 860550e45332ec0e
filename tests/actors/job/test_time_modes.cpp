// Wall and dry time: the math does not depend on the time mode, wall mode measures real
// time (and with shaped links waits at least as long as the link model says), dry mode
// gives virtual mode's times without computing anything.
#include "tests/actors/actor_test_util.hpp"

#include "runtime/sim/simulator.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "runtime/step/link_sharing.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// A job's steps and what its tensor paths counted.
struct run_output {
  std::vector<actors::step_result> steps;
  std::vector<messages::link_sample> samples; ///< every transfer, as the adapter got it
  int64_t messages = 0, serializations = 0, deserializations = 0, payload_copies = 0;
};

run_output run_steps(const runtime::cluster& c, const runtime::plan& plan, int steps,
                     actors::run_mode mode) {
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, c, profile, plan, train_for(plan, steps), test_corpus(),
                        std::chrono::seconds(60), mode);
  run_output out;
  for (int k = 0; k < steps; ++k)
    out.steps.push_back(job.step());
  out.samples = job.samples();
  const auto& n = job.context().counts;
  out.messages = n.messages;
  out.serializations = n.serializations;
  out.deserializations = n.deserializations;
  out.payload_copies = n.payload_copies;
  return out;
}

constexpr actors::run_mode virtual_mode{runtime::time_mode::virtual_time, false};
constexpr actors::run_mode wall_mode{runtime::time_mode::wall, false};
constexpr actors::run_mode shaped_wall_mode{runtime::time_mode::wall, true};
constexpr actors::run_mode dry_mode{runtime::time_mode::dry, false};

/// One pipeline over a slow WAN: cloud A100 -> edge Jetson.
runtime::plan wan_pipeline(runtime::schedule_kind kind) {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan a;
  a.micro_batches = 4;
  a.schedule = kind;
  a.stages = {stage({0}, {2}, 0, 2), stage({4}, {2}, 2, 4)};
  p.pipelines = {a};
  return p;
}

/// A 13B-parameter GPT over two pipelines of 32 one-device stages each: far beyond what
/// this machine could compute (weights alone would take 52 GB per replica).
runtime::plan gpt13b_plan() {
  runtime::plan p;
  p.strategy = "test";
  p.model_name = "custom";
  p.model.n_layer = 40;
  p.model.d_model = 5120;
  p.model.n_head = 40;
  p.model.context = 2048;
  p.model.vocab = 50257;
  p.micro_batch_size = 1;
  constexpr int stages = 32, units = 40 + 2; // embedding, 40 blocks, head
  for (int q = 0; q < 2; ++q) {
    runtime::pipeline_plan pp;
    pp.micro_batches = 64;
    pp.schedule = runtime::schedule_kind::zb_h1;
    for (int s = 0; s < stages; ++s)
      pp.stages.push_back(
          stage({q * stages + s}, {1}, s * units / stages, (s + 1) * units / stages));
    p.pipelines.push_back(pp);
  }
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(wall_time)

BOOST_AUTO_TEST_CASE(losses_are_bit_identical_to_virtual_time) {
  const auto cluster = test_cluster();
  for (auto kind : {runtime::schedule_kind::zb_h1, runtime::schedule_kind::one_f_one_b}) {
    const auto plan = two_pipeline_plan(kind);
    const auto want = run_steps(cluster, plan, 3, virtual_mode).steps;
    const auto got = run_steps(cluster, plan, 3, wall_mode).steps;
    for (size_t k = 0; k < want.size(); ++k) {
      BOOST_CHECK_EQUAL(got[k].loss, want[k].loss);
      BOOST_CHECK_EQUAL(got[k].grad_norm, want[k].grad_norm);
    }
  }
}

BOOST_AUTO_TEST_CASE(times_are_real_seconds_in_step_order) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h2);
  const auto begin = std::chrono::steady_clock::now();
  const auto steps = run_steps(test_cluster(), plan, 3, wall_mode).steps;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  double previous_end = 0;
  for (const auto& r : steps) {
    BOOST_CHECK_GE(r.start_s, previous_end);
    BOOST_CHECK_LE(r.compute_end_s, r.end_s);
    BOOST_CHECK_LE(r.end_s, elapsed); // real seconds since the job began, not emulated ones
    for (const auto& op : r.ops) {
      BOOST_CHECK_LE(r.start_s, op.start);
      BOOST_CHECK_LE(op.start, op.end);
      BOOST_CHECK_LE(op.end, r.compute_end_s);
    }
    previous_end = r.end_s;
  }
}

BOOST_AUTO_TEST_CASE(an_activation_is_serialized_once_and_deserialized_once) {
  const auto out =
      run_steps(test_cluster(), wan_pipeline(runtime::schedule_kind::zb_h1), 2, wall_mode);
  // 2 steps x 4 micro-batches x (activation + gradient) over one boundary.
  BOOST_CHECK_EQUAL(out.messages, 16);
  BOOST_CHECK_EQUAL(out.serializations, 16);
  BOOST_CHECK_EQUAL(out.deserializations, 16);
  BOOST_CHECK_EQUAL(out.payload_copies, 0);
  // A fused backward (1F1B) holds each input gradient until W ends: in its message, which
  // the devices wrote at B and which leaves at W, so no staging copy either.
  const auto fused =
      run_steps(test_cluster(), wan_pipeline(runtime::schedule_kind::one_f_one_b), 2, wall_mode);
  BOOST_CHECK_EQUAL(fused.serializations, 16);
  BOOST_CHECK_EQUAL(fused.deserializations, 16);
  BOOST_CHECK_EQUAL(fused.payload_copies, 0);
}

BOOST_AUTO_TEST_CASE(shaped_links_make_the_sender_wait_as_the_link_model_says) {
  const auto cluster = deepcee::test::slow_short_wan_cluster();
  const auto plan = wan_pipeline(runtime::schedule_kind::zb_h1);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const runtime::virtual_cluster vc(cluster, profile.model(), profile, plan);
  // Each sender's transfers of a step queue on its own FIFO link: even if all of them were
  // sent at the step's start, the last would arrive only after all of them drained.
  double bound = 0;
  for (const auto* parts : {&vc.stage(0, 0).act_parts, &vc.stage(0, 1).grad_parts}) {
    runtime::link_fifo fifo;
    double last = 0;
    for (int micro = 0; micro < plan.pipelines[0].micro_batches; ++micro)
      for (const auto& part : *parts)
        last = std::max(last, fifo.send(part, 0).arrival_s);
    bound = std::max(bound, last);
  }
  BOOST_TEST_MESSAGE("shaped lower bound per step " << bound * 1e3 << " ms");
  BOOST_REQUIRE_GT(bound, 0.05);
  const auto want = run_steps(cluster, plan, 2, virtual_mode).steps;
  const auto got = run_steps(cluster, plan, 2, shaped_wall_mode).steps;
  for (size_t k = 0; k < got.size(); ++k) {
    BOOST_TEST_MESSAGE("shaped wall step " << k + 1 << ": " << (got[k].end_s - got[k].start_s) * 1e3
                                           << " ms");
    BOOST_CHECK_GE(got[k].compute_end_s - got[k].start_s, bound);
    BOOST_CHECK_EQUAL(got[k].loss, want[k].loss);
  }
}

BOOST_AUTO_TEST_CASE(shaped_links_are_shared_by_the_stages_of_a_process) {
  // Two pipelines, both sending cloud -> edge over the one slow WAN: their activations
  // queue on one FIFO, so a step lasts at least as long as that FIFO drains both senders'
  // transfers (twice what each sender's own FIFO would drain).
  const auto cluster = deepcee::test::slow_short_wan_cluster();
  auto plan = wan_pipeline(runtime::schedule_kind::gpipe);
  auto second = plan.pipelines[0];
  second.stages = {stage({1}, {2}, 0, 2), stage({5}, {2}, 2, 4)};
  plan.pipelines.push_back(second);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  const runtime::virtual_cluster vc(cluster, profile.model(), profile, plan);
  runtime::link_fifo shared, own;
  double both = 0, one = 0;
  for (int p = 0; p < 2; ++p)
    for (int micro = 0; micro < plan.pipelines[0].micro_batches; ++micro)
      for (const auto& part : vc.stage(p, 0).act_parts) {
        both = std::max(both, shared.send(part, 0).arrival_s);
        if (p == 0)
          one = std::max(one, own.send(part, 0).arrival_s);
      }
  BOOST_TEST_MESSAGE("one sender's FIFO drains in " << one * 1e3 << " ms, both senders' in "
                                                    << both * 1e3 << " ms");
  BOOST_REQUIRE_GT(both, 1.8 * one);
  const auto got = run_steps(cluster, plan, 2, shaped_wall_mode);
  for (const auto& step : got.steps)
    BOOST_CHECK_GE(step.compute_end_s - step.start_s, both);
  // On the WAN, no transfer starts before the one ahead of it (either sender's) drained.
  int wan = -1;
  for (const auto& a : vc.stage(0, 0).act_parts)
    for (const auto& b : vc.stage(1, 0).act_parts)
      if (a.link == b.link)
        wan = a.link;
  BOOST_REQUIRE_GE(wan, 0);
  std::vector<messages::link_sample> on_wan;
  for (const auto& x : got.samples)
    if (x.link == wan)
      on_wan.push_back(x);
  std::sort(on_wan.begin(), on_wan.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  BOOST_REQUIRE_EQUAL(on_wan.size(), 2u * 2 * 4); // 2 steps, 2 senders, 4 micro-batches
  for (size_t i = 1; i < on_wan.size(); ++i)
    BOOST_CHECK_GE(on_wan[i].start, on_wan[i - 1].drained - 1e-9);
}

BOOST_AUTO_TEST_CASE(links_shared_by_pipelines_need_no_pipes) {
  // Three pipelines cross one WAN pipe each way: virtual time orders them by pipe actors,
  // wall time (shaped or not) needs none, with the same math.
  const auto cluster = test_cluster();
  const auto plan =
      shared_wan_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  BOOST_REQUIRE(!runtime::shared_links(
                     runtime::virtual_cluster(cluster, profile.model(), profile, plan), plan)
                     .empty());
  const auto want = run_steps(cluster, plan, 2, virtual_mode).steps;
  for (const auto mode : {wall_mode, shaped_wall_mode}) {
    const auto got = run_steps(cluster, plan, 2, mode).steps;
    for (size_t k = 0; k < want.size(); ++k)
      BOOST_CHECK_EQUAL(got[k].loss, want[k].loss);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dry_time)

BOOST_AUTO_TEST_CASE(times_are_bit_identical_to_virtual_time) {
  const auto cluster = test_cluster();
  for (auto kind : {runtime::schedule_kind::gpipe, runtime::schedule_kind::zb_h2,
                    runtime::schedule_kind::greedy}) {
    const auto plan = two_pipeline_plan(kind);
    const auto want = run_steps(cluster, plan, 3, virtual_mode).steps;
    const auto dry = run_steps(cluster, plan, 3, dry_mode);
    const auto& got = dry.steps;
    for (size_t k = 0; k < want.size(); ++k) {
      BOOST_CHECK_EQUAL(got[k].start_s, want[k].start_s);
      BOOST_CHECK_EQUAL(got[k].compute_end_s, want[k].compute_end_s);
      BOOST_CHECK_EQUAL(got[k].end_s, want[k].end_s);
      BOOST_CHECK_EQUAL(got[k].loss, 0.0); // not computed
      BOOST_REQUIRE_EQUAL(got[k].ops.size(), want[k].ops.size());
      for (size_t i = 0; i < got[k].ops.size(); ++i) {
        BOOST_CHECK_EQUAL(got[k].op_stage[i], want[k].op_stage[i]);
        BOOST_CHECK_EQUAL(got[k].ops[i].start, want[k].ops[i].start);
        BOOST_CHECK_EQUAL(got[k].ops[i].end, want[k].ops[i].end);
      }
    }
    // Messages went, carrying headers only.
    BOOST_CHECK_GT(dry.messages, 0);
    BOOST_CHECK_EQUAL(dry.serializations, 0);
    BOOST_CHECK_EQUAL(dry.deserializations, 0);
  }
}

BOOST_AUTO_TEST_CASE(shared_wan_pipes_give_virtual_times) {
  // Pipelines that share a 2 Mbps WAN pipe queue behind each other there: dry mode's pipes
  // order them exactly as virtual mode's, from headers that carry the arrival times.
  auto cluster = test_cluster();
  cluster.links.cross_region.bandwidth_Bps = 2e6 / 8;
  for (const auto& [a, b] :
       {std::pair{runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b},
        std::pair{runtime::schedule_kind::zb_h1, runtime::schedule_kind::greedy}}) {
    const auto plan = shared_wan_plan(a, b);
    const auto want = run_steps(cluster, plan, 2, virtual_mode).steps;
    const auto got = run_steps(cluster, plan, 2, dry_mode).steps;
    for (size_t k = 0; k < want.size(); ++k) {
      BOOST_CHECK_EQUAL(got[k].compute_end_s, want[k].compute_end_s);
      BOOST_CHECK_EQUAL(got[k].end_s, want[k].end_s);
      BOOST_REQUIRE_EQUAL(got[k].ops.size(), want[k].ops.size());
      for (size_t i = 0; i < got[k].ops.size(); ++i)
        BOOST_CHECK_EQUAL(got[k].ops[i].start, want[k].ops[i].start);
    }
  }
}

BOOST_AUTO_TEST_CASE(stages_without_weights_refuse_a_checkpoint) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, test_cluster(), profile, plan, train_for(plan, 1), test_corpus(),
                        std::chrono::seconds(60), dry_mode);
  job.step();
  BOOST_CHECK_EXCEPTION(job.gather_parameters(), std::exception, [](const std::exception& e) {
    return std::string(e.what()).find("dry mode") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_job_far_too_large_to_compute_runs_at_the_simulators_times) {
  const auto cluster = deepcee::test::a100_64_cluster();
  const auto plan = gpt13b_plan();
  const auto spec = runtime::make_model_spec(plan.model);
  BOOST_REQUIRE_GT(static_cast<double>(spec.total_params()), 12e9);
  const runtime::profile_table profile(spec);
  constexpr int steps = 2;
  runtime::sim_options so;
  so.steps = steps;
  const auto sim = runtime::simulate(cluster, spec, profile, plan, {}, so);
  const auto begin = std::chrono::steady_clock::now();
  const auto dry = run_steps(cluster, plan, steps, dry_mode);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  BOOST_TEST_MESSAGE("dry 13B job, 2 x 32 stages, " << steps << " steps: " << elapsed << " s");
  for (int k = 0; k < steps; ++k) {
    const auto& r = dry.steps[static_cast<size_t>(k)];
    const double predicted = sim.step_times_s[static_cast<size_t>(k)];
    BOOST_TEST_MESSAGE("step " << k + 1 << ": dry " << r.end_s - r.start_s << " s, simulator "
                               << predicted << " s");
    BOOST_CHECK_CLOSE(r.end_s - r.start_s, predicted, 1e-6);
  }
  // 2 pipelines x 31 boundaries x 64 micro-batches x (activation + gradient) per step.
  BOOST_CHECK_EQUAL(dry.messages, steps * 2 * 31 * 64 * 2);
  // No timed assertion (the suite's CTest timeout bounds it); it takes about 0.1 s here.
}

BOOST_AUTO_TEST_SUITE_END()
