// A step order can reach a stage before its wiring (across nodes the coordinator's step
// order and the wiring travel on different connections). The stage keeps the order and
// starts the step once wired; the step then ends as it does in the usual order. Driven by
// CAF's deterministic test_coordinator, so "before" is exact.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/adapter_actor.hpp"
#include "actors/job/coordinator.hpp"
#include "actors/net/pipe_actor.hpp"
#include "actors/stage/stage_actor.hpp"

#include <caf/exit_reason.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <boost/test/unit_test.hpp>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// Three pipelines sharing the WAN both ways: stages also wait on pipe actors.
const runtime::plan plan =
    shared_wan_plan(runtime::schedule_kind::zb_h1, runtime::schedule_kind::one_f_one_b);

/// Step 1 of the job, its stages wired in the usual order (local_job wires every stage
/// before the first step).
actors::step_result usual_order() {
  testing_config cfg;
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  actors::step_result out;
  {
    const runtime::profile_table profile(runtime::make_model_spec(plan.model));
    actors::local_job job(sys, test_cluster(), profile, plan, train_for(plan, 2), test_corpus());
    sched.run();
    caf::scoped_actor self{sys};
    auto rh = self->request(job.coordinator(), caf::infinite, actors::step_atom_v, int64_t{1});
    sched.run();
    BOOST_REQUIRE(!self->mailbox().empty()); // answered: receive cannot block
    rh.receive([&](actors::step_result& r) { out = std::move(r); },
               [&](caf::error& e) { BOOST_FAIL(sys.render(e)); });
  }
  sched.run();
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(step_before_wiring)

BOOST_AUTO_TEST_CASE(a_stage_ordered_before_its_wiring_starts_once_wired) {
  const auto want = usual_order();

  testing_config cfg;
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  {
    const runtime::profile_table profile(runtime::make_model_spec(plan.model));
    auto ctx =
        actors::make_job_context(test_cluster(), profile, plan, train_for(plan, 2), test_corpus());
    std::vector<actors::stage_actor> stages;
    for (int p = 0; p < static_cast<int>(plan.pipelines.size()); ++p)
      for (int s = 0; s < ctx->stage_count(p); ++s)
        stages.push_back(actors::spawn_stage(sys, ctx, p, s));
    auto adapter = actors::spawn_adapter(sys);
    auto coordinator = actors::spawn_coordinator(sys, ctx, stages);
    actors::stage_wiring wiring;
    for (auto& s : stages)
      wiring.stages.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
    wiring.coordinator = caf::actor_cast<caf::strong_actor_ptr>(coordinator);
    wiring.adapter = caf::actor_cast<caf::strong_actor_ptr>(adapter);
    wiring.pipes = actors::spawn_pipes(sys, ctx, stages, coordinator, adapter);
    BOOST_REQUIRE(!wiring.pipes.empty());

    // Pipeline 0's first stage (it starts the step) and pipeline 2's middle stage get the
    // step order first; every other stage is wired before it.
    const size_t first = 0, middle = static_cast<size_t>(ctx->flat_index(2, 1));
    caf::scoped_actor self{sys};
    for (size_t k = 0; k < stages.size(); ++k)
      if (k != first && k != middle)
        self->send(stages[k], wiring);
    sched.run();
    auto rh = self->request(coordinator, caf::infinite, actors::step_atom_v, int64_t{1});
    sched.run();
    BOOST_TEST(self->mailbox().empty()); // the step waits for its unwired stages
    self->send(stages[middle], wiring);
    sched.run();
    BOOST_TEST(self->mailbox().empty()); // and still for the first one
    self->send(stages[first], wiring);
    sched.run();
    actors::step_result got;
    BOOST_REQUIRE(!self->mailbox().empty());
    rh.receive([&](actors::step_result& r) { got = std::move(r); },
               [&](caf::error& e) { BOOST_FAIL(sys.render(e)); });
    BOOST_TEST(got.step == 1);
    BOOST_TEST(got.loss == want.loss); // the same math, bit for bit
    BOOST_TEST(got.grad_norm == want.grad_norm);
    BOOST_TEST(got.end_s == want.end_s); // and the same virtual time
    BOOST_TEST(got.ops.size() == want.ops.size());

    for (auto& s : stages)
      self->send_exit(s, caf::exit_reason::user_shutdown);
    self->send_exit(coordinator, caf::exit_reason::user_shutdown);
    self->send_exit(adapter, caf::exit_reason::user_shutdown);
    for (auto& p : wiring.pipes)
      self->send_exit(caf::actor_cast<caf::actor>(p), caf::exit_reason::user_shutdown);
  }
  sched.run();
}

BOOST_AUTO_TEST_SUITE_END()
