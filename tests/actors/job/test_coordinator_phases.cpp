// The coordinator's phases (coordinator.hpp). One step runs at a time, and the clock is
// restored only between steps. A stage's error fails the step with the stage's code, and
// no step runs after it. A stop ends the job for good with its first reason. Dry time
// under CAF's deterministic scheduler: every message runs on this thread, in the order sent.
#include "tests/actors/actor_test_util.hpp"

#include "actors/protocol/errors.hpp"

#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>

using namespace deepcee;
using namespace deepcee::actors::test;
using messages::error_code;

namespace {

/// A dry job of two pipelines under the deterministic scheduler.
struct dry_job {
  testing_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  runtime::plan plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  std::optional<actors::local_job> job;
  std::optional<caf::scoped_actor> self;

  dry_job() {
    job.emplace(
        sys, test_cluster(), profile, plan, train_for(plan, 5), test_corpus(),
        std::chrono::minutes(2),
        actors::run_mode{.time = runtime::time_mode::dry, .shape_links = false, .adapt = true});
    self.emplace(sys);
    sched.run();
  }
  ~dry_job() {
    self.reset();
    job.reset();
    sched.run();
  }

  const actors::coordinator_actor& coordinator() const { return job->coordinator(); }

  /// A request's outcome once every message ran: its error, or none.
  template <class Result, class Handle>
  caf::error outcome(Handle& rh) {
    sched.run();
    caf::error out;
    rh.receive([](Result&) {}, [&](caf::error& e) { out = std::move(e); });
    return out;
  }

  caf::error step(int64_t k) {
    auto rh = (*self)->request(coordinator(), caf::infinite, actors::step_atom_v, k);
    return outcome<actors::step_result>(rh);
  }

  /// What a stage sends when its optimizer step or its group fails.
  messages::stage_report error_report(int64_t step, error_code code) const {
    messages::stage_report r;
    r.step = step;
    r.error = "pipeline 0 stage 1: the group: a device timed out";
    r.code = code;
    return r;
  }
};

std::string text(const caf::error& e) {
  return e.context().match_element<std::string>(0) ? e.context().get_as<std::string>(0) : "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(coordinator_phases)

BOOST_AUTO_TEST_CASE(one_step_at_a_time_and_the_clock_only_between_steps) {
  dry_job j;
  auto& self = *j.self;
  auto first = self->request(j.coordinator(), caf::infinite, actors::step_atom_v, int64_t{1});
  auto second = self->request(j.coordinator(), caf::infinite, actors::step_atom_v, int64_t{2});
  auto clock = self->request(j.coordinator(), caf::infinite, actors::restore_atom_v, 5.0);
  BOOST_TEST(!j.outcome<actors::step_result>(first));
  const auto refused = j.outcome<actors::step_result>(second);
  BOOST_TEST((actors::code_of(refused) == error_code::internal));
  BOOST_TEST(text(refused) == "step 2 asked while one runs");
  BOOST_TEST(text(j.outcome<double>(clock)) == "clock restored while a step runs");
  // Between steps both are welcome.
  auto restored = self->request(j.coordinator(), caf::infinite, actors::restore_atom_v, 5.0);
  BOOST_TEST(!j.outcome<double>(restored));
  BOOST_TEST(!j.step(2));
}

BOOST_AUTO_TEST_CASE(a_stage_error_fails_the_step_with_its_code_and_no_step_runs_after) {
  dry_job j;
  auto& self = *j.self;
  auto rh = self->request(j.coordinator(), caf::infinite, actors::step_atom_v, int64_t{1});
  self->send(j.coordinator(), j.error_report(1, error_code::timeout));
  const auto failed = j.outcome<actors::step_result>(rh);
  BOOST_TEST((actors::code_of(failed) == error_code::timeout));
  BOOST_TEST(text(failed) == "pipeline 0 stage 1: the group: a device timed out");

  const auto after = j.step(2);
  BOOST_TEST((actors::code_of(after) == error_code::internal));
  BOOST_TEST(text(after) == "the job cannot go on after step 1 failed (pipeline 0 stage 1: the "
                            "group: a device timed out)");
  // Nothing can be ordered for a step that never comes.
  messages::rebalance allocation;
  allocation.micro_batches = {4, 2};
  allocation.effective_step = 3;
  auto order = self->request(j.coordinator(), caf::infinite, allocation);
  BOOST_TEST(text(j.outcome<int64_t>(order)) == text(after));
}

BOOST_AUTO_TEST_CASE(a_stage_error_between_steps_ends_the_job) {
  dry_job j;
  BOOST_TEST(!j.step(1));
  (*j.self)->send(j.coordinator(), j.error_report(1, error_code::peer_down));
  const auto after = j.step(2);
  BOOST_TEST((actors::code_of(after) == error_code::internal));
  BOOST_TEST(text(after) == "the job cannot go on after step 1 (pipeline 0 stage 1: the group: "
                            "a device timed out)");
}

BOOST_AUTO_TEST_CASE(a_stop_ends_the_job_for_good_with_its_first_reason) {
  dry_job j;
  BOOST_TEST(!j.step(1));
  (*j.self)->send(j.coordinator(), actors::stop_atom_v, std::string("node e0 went away"));
  (*j.self)->send(j.coordinator(), actors::stop_atom_v, std::string("a later reason"));
  const auto after = j.step(2);
  BOOST_TEST((actors::code_of(after) == error_code::peer_down));
  BOOST_TEST(text(after) == "node e0 went away");
  messages::script_update events;
  runtime::device_change slower;
  slower.at_s = 1;
  slower.device = 2;
  slower.slowdown = 2;
  events.script = runtime::link_timeline{{}, {slower}};
  auto injected = (*j.self)->request(j.coordinator(), caf::infinite, events);
  BOOST_TEST((actors::code_of(j.outcome<int64_t>(injected)) == error_code::peer_down));
}

BOOST_AUTO_TEST_SUITE_END()
