#pragma once

#include "actors/job/adapter_actor.hpp"
#include "actors/job/local_job.hpp"
#include "actors/protocol/type_ids.hpp"
#include "runtime/adapt/active_probe.hpp"
#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <memory>
#include <set>
#include <string>

namespace deepcee::actors::test {

/// A real actor system with two workers (the host has two cores) and the job's types.
struct system_fixture {
  struct config : system_config {
    config() {
      set("scheduler.max-threads", 2);
      set("logger.console", caf::atom("none"));
    }
  };
  config cfg;
  caf::actor_system sys{cfg};
};

/// CAF's deterministic "testing" scheduler: messages run only when a test says so, in an
/// order it chooses.
struct testing_config : system_config {
  testing_config() {
    set("scheduler.policy", caf::atom("testing"));
    set("logger.console", caf::atom("none"));
  }
};

/// The cluster every actor test runs on (tests/support/clusters.hpp).
inline runtime::cluster test_cluster() {
  return deepcee::test::actors_test_cluster();
}

inline runtime::model_config tiny_model() {
  runtime::model_config m;
  m.n_layer = 2;
  m.d_model = 32;
  m.n_head = 2;
  m.context = 16;
  m.vocab = 256;
  return m;
}

inline std::shared_ptr<const runtime::text_corpus> test_corpus() {
  std::string train, validation;
  const char* words[] = {"cloud ",    "edge ",  "end ",  "pipeline ", "stage ", "bubble ",
                         "gradient ", "actor ", "link ", "zero ",     "the ",   "of "};
  uint64_t x = 12345;
  for (int i = 0; i < 6000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    (i % 10 == 9 ? validation : train) += words[(x >> 33) % 12];
  }
  return std::make_shared<const runtime::text_corpus>(
      runtime::text_corpus::from_texts(train, validation, "actors-test-corpus"));
}

inline runtime::stage_plan stage(std::vector<int> devices, std::vector<int> samples, int first,
                                 int last) {
  runtime::stage_plan s;
  s.devices = std::move(devices);
  s.samples = std::move(samples);
  s.first_layer = first;
  s.last_layer = last;
  return s;
}

/// A pipeline of `stages` running `micro_batches` micro-batches under `schedule`.
inline runtime::pipeline_plan
pipeline_of(int micro_batches, std::vector<runtime::stage_plan> stages,
            runtime::schedule_kind schedule = runtime::schedule_kind::one_f_one_b) {
  runtime::pipeline_plan a;
  a.micro_batches = micro_batches;
  a.schedule = schedule;
  a.stages = std::move(stages);
  return a;
}

/// A plan of the tiny model in micro-batches of 2 samples, of `pipelines`.
inline runtime::plan tiny_plan(std::vector<runtime::pipeline_plan> pipelines) {
  runtime::plan p;
  p.strategy = "test";
  p.model_name = "custom";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  p.pipelines = std::move(pipelines);
  return p;
}

/// One pipeline of one stage (every layer of the tiny model) on `devices`, each taking its
/// `samples` of every micro-batch; two micro-batches, GPipe.
inline runtime::plan one_stage_plan(std::vector<int> devices, std::vector<int> samples) {
  runtime::plan p;
  p.strategy = "test";
  p.model_name = "custom";
  p.model = tiny_model();
  p.micro_batch_size = 0;
  for (int n : samples)
    p.micro_batch_size += n;
  runtime::pipeline_plan a;
  a.micro_batches = 2;
  a.schedule = runtime::schedule_kind::gpipe;
  a.stages = {stage(std::move(devices), std::move(samples), 0, p.model.n_layer + 2)};
  p.pipelines = {a};
  return p;
}

/// Two asymmetric pipelines with data parallelism inside stages: pipeline 0 has three
/// stages (the first split over two devices), pipeline 1 two (the last split), and
/// different layer cuts, so the all-reduce crosses stage boundaries.
inline runtime::plan two_pipeline_plan(runtime::schedule_kind kind) {
  return tiny_plan(
      {pipeline_of(4, {stage({0, 1}, {1, 1}, 0, 1), stage({2}, {2}, 1, 3), stage({4}, {2}, 3, 4)},
                   kind),
       pipeline_of(2, {stage({3}, {2}, 0, 2), stage({5, 6}, {1, 1}, 2, 4)}, kind)});
}

/// Three pipelines that all cross the one cloud-edge WAN, in both directions: pipeline 0
/// sends activations cloud->edge, pipeline 1 edge->cloud, pipeline 2 both ways. Each WAN
/// direction is thus one pipe shared by activations and gradients of several senders.
inline runtime::plan shared_wan_plan(runtime::schedule_kind a, runtime::schedule_kind b) {
  runtime::plan p;
  p.strategy = "test";
  p.model = tiny_model();
  p.micro_batch_size = 2;
  runtime::pipeline_plan p0, p1, p2;
  p0.micro_batches = 4;
  p0.schedule = a;
  p0.stages = {stage({0}, {2}, 0, 2), stage({4}, {2}, 2, 4)};
  p1.micro_batches = 3;
  p1.schedule = b;
  p1.stages = {stage({5}, {2}, 0, 2), stage({2}, {2}, 2, 4)};
  p2.micro_batches = 3;
  p2.schedule = a;
  p2.stages = {stage({1}, {2}, 0, 1), stage({6}, {2}, 1, 3), stage({3}, {2}, 3, 4)};
  p.pipelines = {p0, p1, p2};
  return p;
}

/// A script that kills node `node` when the job starts step `step`.
inline runtime::link_timeline kill_at_step(const runtime::cluster& c, int step, const char* node) {
  return runtime::parse_link_timeline("[[node]]\nstep = " + std::to_string(step) + "\nnode = \"" +
                                          node + "\"\naction = \"kill\"\n",
                                      c, "kill.toml");
}

/// simulate --adaptive's options for `steps` steps as a job in `mode` runs its adapter: the
/// adapter's policy and bands, the mode's liveness bound and snapshot interval.
inline runtime::adaptive_options adaptive_as_run(int steps, const run_mode& mode) {
  const adapter_options adapter;
  runtime::adaptive_options ao;
  ao.steps = steps;
  ao.band = adapter.band;
  ao.policy = adapter.policy;
  ao.liveness_s = mode.liveness_s;
  ao.snapshot_every = mode.snapshot_every;
  return ao;
}

inline runtime::train_config train_for(const runtime::plan& p, int steps) {
  runtime::train_config t;
  t.model = p.model;
  t.batch = p.global_batch();
  t.steps = steps;
  t.seed = 7;
  return t;
}

/// What the inspector reads after a step that `ran` ran: the coordinator's plan in force
/// (rebalances and re-plans included), and the adapter's links, which are exactly the
/// directed pairs `ran` sends on, none estimated faster than the cluster's figure.
inline void check_plan_in_force(caf::actor_system& sys, local_job& job, const runtime::plan& ran,
                                int step) {
  const auto now = job_now(sys, job.wired(), std::chrono::seconds(10));
  BOOST_CHECK_MESSAGE(runtime::same_layout(now.plan, ran) &&
                          runtime::allocation_of(now.plan) == runtime::allocation_of(ran),
                      "step " << step << ": the job's plan in force is not the plan that ran");
  std::set<std::pair<int, int>> shown;
  for (const auto& l : job.links()) {
    shown.insert({l.from, l.to});
    // Within the rounding of a drain of microseconds on a clock at seconds.
    BOOST_CHECK_LE(l.estimated.bandwidth_Bps, l.assumed.bandwidth_Bps * (1 + 1e-3));
  }
  BOOST_CHECK_MESSAGE(shown == runtime::measured_pairs(ran),
                      "step " << step << ": the links shown are not the pairs the plan sends on");
}

} // namespace deepcee::actors::test
