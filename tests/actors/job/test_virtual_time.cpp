// Virtual time: the runtime's measured step time equals the simulator's prediction for the
// same plan (within 2%), and link samples reach the adapter.
#include "tests/actors/actor_test_util.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/sim/simulator.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "runtime/step/link_sharing.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

struct scenario {
  std::string name;
  runtime::plan plan;
  runtime::cluster cluster = test_cluster();
};

runtime::plan one_pipeline(runtime::schedule_kind kind) {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan a;
  a.micro_batches = 6;
  a.schedule = kind;
  // cloud A100 pair -> cloud T4 -> edge Jetson: one WAN hop, intra-stage DP first.
  a.stages = {stage({0, 1}, {1, 1}, 0, 2), stage({2}, {2}, 2, 3), stage({4}, {2}, 3, 4)};
  p.pipelines = {a};
  return p;
}

/// Runs `steps` steps of `plan` and checks every step's virtual time against the simulator.
void check_against_simulator(const std::string& name, const runtime::cluster& cluster,
                             const runtime::plan& plan, int steps) {
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  runtime::sim_options so;
  so.steps = steps;
  const auto sim = runtime::simulate(cluster, spec, profile, plan, {}, so);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, steps), test_corpus());
  for (int k = 0; k < steps; ++k) {
    const auto r = job.step();
    const double measured = r.end_s - r.start_s;
    const double predicted = sim.step_times_s[static_cast<size_t>(k)];
    BOOST_TEST_MESSAGE(name << " step " << k + 1 << ": runtime " << measured * 1e3
                            << " ms, simulator " << predicted * 1e3 << " ms");
    BOOST_CHECK_MESSAGE(std::abs(measured - predicted) <= 0.02 * predicted,
                        name << " step " << k + 1 << ": runtime " << measured << " s, simulator "
                             << predicted << " s");
  }
}

/// Three pipelines across the two nodes of slow_lan_two_nodes_cluster, two one way and one
/// the other: their transfers share the nodes' interfaces, and the all-reduce of each half
/// of the model crosses them too.
runtime::plan shared_nic_plan(runtime::schedule_kind a, runtime::schedule_kind b) {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan p0, p1, p2;
  p0.micro_batches = 4;
  p0.schedule = a;
  p0.stages = {stage({0}, {2}, 0, 2), stage({3}, {2}, 2, 4)};
  p1.micro_batches = 3;
  p1.schedule = b;
  p1.stages = {stage({1}, {2}, 0, 2), stage({4}, {2}, 2, 4)};
  p2.micro_batches = 3;
  p2.schedule = a;
  p2.stages = {stage({5}, {2}, 0, 2), stage({2}, {2}, 2, 4)};
  p.pipelines = {p0, p1, p2};
  return p;
}

std::vector<scenario> scenarios() {
  std::vector<scenario> out;
  out.push_back({"1 pipeline x 3 stages, 1f1b", one_pipeline(runtime::schedule_kind::one_f_one_b)});
  out.push_back({"1 pipeline x 3 stages, zb-h1", one_pipeline(runtime::schedule_kind::zb_h1)});
  out.push_back({"1 pipeline x 3 stages, greedy", one_pipeline(runtime::schedule_kind::greedy)});
  out.push_back(
      {"2 pipelines (3 + 2 stages), gpipe", two_pipeline_plan(runtime::schedule_kind::gpipe)});
  out.push_back(
      {"2 pipelines (3 + 2 stages), zb-h2", two_pipeline_plan(runtime::schedule_kind::zb_h2)});
  out.push_back(
      {"3 pipelines sharing a 2 Mbps WAN both ways, 1f1b",
       shared_wan_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b),
       deepcee::test::slow_wan_cluster()});
  out.push_back({"3 pipelines sharing a 2 Mbps WAN both ways, zb-h1 + greedy",
                 shared_wan_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::greedy),
                 deepcee::test::slow_wan_cluster()});
  out.push_back({"3 pipelines sharing a 2 Mbps WAN both ways, gpipe + zb-h2",
                 shared_wan_plan(runtime::schedule_kind::gpipe, runtime::schedule_kind::zb_h2),
                 deepcee::test::slow_wan_cluster()});
  out.push_back(
      {"3 pipelines sharing two nodes' interfaces on a 2 Mbps LAN, 1f1b",
       shared_nic_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b),
       deepcee::test::slow_lan_two_nodes_cluster()});
  out.push_back({"3 pipelines sharing two nodes' interfaces on a 2 Mbps LAN, zb-h1 + greedy",
                 shared_nic_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::greedy),
                 deepcee::test::slow_lan_two_nodes_cluster()});
  // Activation recomputation: the recomputing stages' B runs their F again first.
  auto recomputing = one_pipeline(runtime::schedule_kind::one_f_one_b);
  recomputing.pipelines[0].stages[1].recompute = true;
  recomputing.pipelines[0].stages[2].recompute = true;
  out.push_back({"1 pipeline x 3 stages, 1f1b, stages 1-2 recompute", recomputing});
  auto recomputing_zb = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  recomputing_zb.pipelines[0].stages[0].recompute = true;
  recomputing_zb.pipelines[1].stages[1].recompute = true;
  out.push_back({"2 pipelines (3 + 2 stages), zb-h1, two stages recompute", recomputing_zb});
  out.push_back(
      {"3 pipelines sharing a 100 Mbps WAN both ways, zb-h1 + 1f1b",
       shared_wan_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::one_f_one_b)});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(virtual_time)

BOOST_AUTO_TEST_CASE(step_time_matches_simulator) {
  for (const auto& sc : scenarios())
    check_against_simulator(sc.name, sc.cluster, sc.plan, 3);
}

BOOST_AUTO_TEST_CASE(hybrid_plan_sharing_the_cee_small_wan_matches_simulator) {
  // The saved hybrid plan: both pipelines' first stages send over the one cloud->edge pipe
  // and their second stages' gradients share the edge->cloud one.
  check_against_simulator(
      "cee-small hybrid",
      runtime::load_cluster(deepcee::test::configs_dir() / "clusters/cee-small.toml"),
      runtime::load_plan(deepcee::test::configs_dir() / "plans/cee-small-hybrid.json"), 2);
}

BOOST_AUTO_TEST_CASE(pipelines_crossing_one_interface_need_a_pipe_and_queue_on_it) {
  // No device pair carries two pipelines, yet their transfers share the nodes' interfaces:
  // the runtime orders them in one pipe per direction, and the step's compute cannot end
  // before n0's interface has drained everything that leaves n0 (activations of pipelines 0
  // and 1, gradients of pipeline 2) one after the other, while each pipeline alone ends
  // sooner than that.
  const auto cluster = deepcee::test::slow_lan_two_nodes_cluster();
  const auto plan =
      shared_nic_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b);
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  const runtime::virtual_cluster vc(cluster, spec, profile, plan);
  const auto shared = runtime::shared_links(vc, plan);
  BOOST_REQUIRE_EQUAL(shared.size(), 2u); // n0 -> n1 and n1 -> n0
  const double bw = cluster.links.same_region.bandwidth_Bps;
  double out_of_n0 = 0;
  for (const auto& [pipeline, stage, forward] :
       {std::tuple{0, 0, true}, {1, 0, true}, {2, 1, false}}) {
    const auto& st = vc.stage(pipeline, stage);
    for (const auto& part : forward ? st.act_parts : st.grad_parts)
      out_of_n0 += part.bytes * plan.pipelines[static_cast<size_t>(pipeline)].micro_batches / bw;
  }
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 1), test_corpus());
  const auto r = job.step();
  double alone = 0;
  for (const auto& one : plan.pipelines) {
    auto single = plan;
    single.pipelines = {one};
    const auto sim = runtime::simulate(cluster, spec, profile, single);
    for (const auto& st : sim.stages[0])
      alone = std::max(alone, st.compute_end_s);
  }
  BOOST_TEST_MESSAGE("compute " << (r.compute_end_s - r.start_s) * 1e3 << " ms, n0's interface "
                                << out_of_n0 * 1e3 << " ms, slowest pipeline alone " << alone * 1e3
                                << " ms");
  BOOST_CHECK_GE(r.compute_end_s - r.start_s, out_of_n0);
  BOOST_CHECK_LT(alone, out_of_n0);
}

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_host) {
  // Three runs of the same job give bit-identical losses and virtual times, op by op,
  // with and without shared links.
  const auto corpus = test_corpus();
  for (const auto& [plan, cluster] : std::vector<std::pair<runtime::plan, runtime::cluster>>{
           {two_pipeline_plan(runtime::schedule_kind::zb_h1), deepcee::test::slow_wan_cluster()},
           {shared_wan_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::greedy),
            deepcee::test::slow_wan_cluster()},
           {shared_nic_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::greedy),
            deepcee::test::slow_lan_two_nodes_cluster()}}) {
    const runtime::profile_table profile(runtime::make_model_spec(plan.model));
    std::vector<actors::step_result> first;
    for (int run = 0; run < 3; ++run) {
      system_fixture f;
      actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 3), corpus);
      for (int k = 0; k < 3; ++k) {
        auto r = job.step();
        if (run == 0) {
          first.push_back(r);
          continue;
        }
        const auto& want = first[static_cast<size_t>(k)];
        BOOST_CHECK_EQUAL(r.loss, want.loss);
        BOOST_CHECK_EQUAL(r.end_s, want.end_s);
        BOOST_REQUIRE_EQUAL(r.ops.size(), want.ops.size());
        for (size_t i = 0; i < r.ops.size(); ++i) {
          BOOST_CHECK_EQUAL(r.ops[i].start, want.ops[i].start);
          BOOST_CHECK_EQUAL(r.ops[i].end, want.ops[i].end);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_shared_link_carries_one_transfer_at_a_time_in_send_order) {
  // Every transfer on a WAN pipe, whichever stage sent it, starts only once the previous
  // one drained, and the pipe takes them in the order they were sent.
  const auto plan =
      shared_wan_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, deepcee::test::slow_wan_cluster(), profile, plan, train_for(plan, 2),
                        test_corpus());
  job.step();
  job.step();
  std::map<int, std::vector<messages::link_sample>> by_link;
  for (const auto& s : job.samples())
    by_link[s.link].push_back(s);
  int shared = 0;
  for (auto& [link, samples] : by_link) {
    std::set<std::pair<int, int>> senders;
    for (const auto& s : samples)
      senders.insert({s.pipeline, s.stage});
    if (senders.size() < 2)
      continue;
    ++shared;
    std::sort(samples.begin(), samples.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    for (size_t k = 1; k < samples.size(); ++k) {
      BOOST_CHECK_GE(samples[k].start, samples[k - 1].drained);
      BOOST_CHECK_GE(samples[k].send_time, samples[k - 1].send_time);
    }
  }
  BOOST_CHECK_EQUAL(shared, 2); // cloud->edge and edge->cloud
}

BOOST_AUTO_TEST_CASE(a_sender_that_never_sends_fails_the_step_by_its_timeout) {
  // A stage of a shared pipe stops (its actor is gone): the pipe can never commit the
  // other senders' transfers after its last promise, yet the step fails within the step
  // timeout, naming the stages it waits for, instead of hanging.
  const auto plan =
      shared_wan_plan(runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  actors::local_job job(f.sys, test_cluster(), profile, plan, train_for(plan, 2), test_corpus(),
                        std::chrono::milliseconds(800));
  job.step();
  caf::scoped_actor self{f.sys};
  self->send_exit(job.stages()[0], caf::exit_reason::kill); // pipeline 0 stage 0
  const auto began = std::chrono::steady_clock::now();
  std::string error;
  try {
    job.step();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const auto took = std::chrono::steady_clock::now() - began;
  BOOST_TEST_MESSAGE("failed with: " << error);
  BOOST_CHECK(error.find("no report from pipeline 0 stage 0") != std::string::npos);
  BOOST_CHECK(error.find("within") != std::string::npos);
  BOOST_CHECK(took < std::chrono::seconds(5));
  // Its stages may hold half-reduced gradients: no later step runs (recovery is not there).
  try {
    job.step();
    BOOST_ERROR("a step ran after a failed one");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("the job cannot go on after step 2 failed (no "
                                          "report from pipeline 0 stage 0") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(link_samples_reach_the_adapter) {
  const auto cluster = test_cluster();
  const auto plan = one_pipeline(runtime::schedule_kind::one_f_one_b);
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 2), test_corpus());
  job.step();
  job.step();
  // Per step and micro-batch, each boundary carries one activation and one gradient of the
  // whole micro-batch (split into parts between the devices).
  const double per_transfer =
      static_cast<double>(spec.transfer_bytes(2, runtime::compression::none));
  const double expected =
      2 /*steps*/ * 6 /*micro*/ * 2 /*boundaries*/ * 2 /*directions*/ * per_transfer;
  double bytes = 0;
  for (const auto& l : job.links())
    bytes += l.carried.bytes;
  BOOST_CHECK_CLOSE(bytes, expected, 1e-9);
  const auto samples = job.samples();
  BOOST_CHECK(!samples.empty());
  for (const auto& s : samples)
    BOOST_CHECK(s.end >= s.drained && s.drained >= s.start && s.start >= s.send_time);
}

BOOST_AUTO_TEST_CASE(a_training_batch_other_than_the_plans_is_refused_up_front) {
  // The plan's micro-batches must add up to the training batch: anything else is bad
  // input, refused before any actor runs.
  const auto cluster = test_cluster();
  auto plan = one_pipeline(runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  system_fixture f;
  auto train = train_for(plan, 2);
  train.batch += 1;
  BOOST_CHECK_THROW(actors::local_job(f.sys, cluster, profile, plan, train, test_corpus()),
                    runtime::input_error);
}

BOOST_AUTO_TEST_SUITE_END()
