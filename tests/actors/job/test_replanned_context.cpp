// The job context a re-plan runs: the running job's, with only the plan, its emulated
// cluster and its node layout changed. Every other field is set to a value no default has,
// so that a field the copy drops fails here.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/coordinator_replan.hpp"
#include "runtime/plan/node_layout.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

runtime::device_change slower(double at_s, int device, double slowdown) {
  runtime::device_change c;
  c.at_s = at_s;
  c.device = device;
  c.slowdown = slowdown;
  return c;
}

struct running_job {
  runtime::cluster cluster = test_cluster();
  runtime::plan plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  runtime::plan next = one_stage_plan({0, 1}, {1, 1});
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  /// The job's script as given, and the one in force (an event injected since).
  runtime::link_timeline script{{}, {slower(2.5, 3, 2)}};
  runtime::link_timeline in_force{{}, {slower(1.5, 4, 3)}};
  std::shared_ptr<actors::job_context> job;

  running_job() {
    auto train = train_for(plan, 5);
    train.seed = 1234;
    job = actors::make_job_context(
        cluster, profile, plan, train, test_corpus(),
        {.time = runtime::time_mode::wall, .shape_links = true, .adapt = false}, script);
    job->ring_chunk_values = 123;
    job->boot_id = "boot-of-this-host";
    job->epoch = std::chrono::steady_clock::now() - std::chrono::hours(1);
    ++job->counts.messages;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(replanned_context_copy)

BOOST_AUTO_TEST_CASE(every_setting_survives_and_only_what_the_plan_decides_changes) {
  running_job r;
  r.job->place_on_nodes(r.cluster);
  const auto out = actors::replanned_context(*r.job, r.next, r.in_force);
  const auto& job = *r.job;

  // What the re-plan changes: the plan, its emulated cluster under the script in force, and
  // where its stages run.
  BOOST_TEST(out->plan.pipelines.size() == 1u);
  BOOST_TEST(out->plan.pipelines[0].stages[0].devices == (std::vector<int>{0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(out->cluster != job.cluster);
  BOOST_TEST((out->cluster->timeline() == r.in_force));
  BOOST_TEST(out->layout.stage_node == runtime::layout_of(r.cluster, r.next).stage_node,
             boost::test_tools::per_element());
  BOOST_TEST(out->stage_nodes.size() == 1u);
  BOOST_TEST(out->node_names == job.node_names, boost::test_tools::per_element());

  // What it keeps.
  BOOST_TEST(out->train.seed == 1234u);
  BOOST_TEST(out->train.steps == job.train.steps);
  BOOST_TEST(out->train.batch == job.train.batch);
  BOOST_TEST(out->corpus == job.corpus);
  BOOST_TEST((out->script == r.script));
  BOOST_TEST((out->mode.time == runtime::time_mode::wall));
  BOOST_TEST(out->mode.shape_links);
  BOOST_TEST(!out->mode.adapt);
  BOOST_TEST(!out->local_index.empty());
  BOOST_TEST(out->local_index == job.local_index, boost::test_tools::per_element());
  BOOST_TEST(out->ring_chunk_values == 123u);
  BOOST_TEST((out->epoch == job.epoch));
  BOOST_TEST(out->boot_id == "boot-of-this-host");

  // What the actors of a context write is that context's own.
  BOOST_TEST(job.counts.messages.load() == 1);
  BOOST_TEST(out->counts.messages.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_job_of_one_process_stays_one) {
  running_job r;
  const auto out = actors::replanned_context(*r.job, r.next, r.in_force);
  BOOST_TEST(out->layout.empty());
  BOOST_TEST(out->stage_nodes.empty());
  BOOST_TEST(out->boot_id == "boot-of-this-host");
}

BOOST_AUTO_TEST_SUITE_END()
