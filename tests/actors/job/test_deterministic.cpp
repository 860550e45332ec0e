// The same job under CAF's deterministic test_coordinator (STYLE point 8): every message
// is delivered by sched.run() on this thread, so the whole step is one reproducible run.
#include "tests/actors/actor_test_util.hpp"

#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "messages/codec.hpp"

#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>

namespace caf {
inline void boost_test_print_type(std::ostream& out, const caf::error& e) {
  out << to_string(e);
}
} // namespace caf

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {} // namespace

BOOST_AUTO_TEST_SUITE(deterministic_scheduler)

BOOST_AUTO_TEST_CASE(two_steps_equal_single_device_training) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  const auto train = train_for(plan, 2);
  const auto corpus = test_corpus();
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);

  testing_config cfg;
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  {
    actors::local_job job(sys, test_cluster(), profile, plan, train, corpus);
    caf::scoped_actor self{sys};
    for (int64_t k = 1; k <= 2; ++k) {
      auto rh = self->request(job.coordinator(), caf::infinite, actors::step_atom_v, k);
      sched.run();
      actors::step_result got;
      caf::error err;
      rh.receive([&](actors::step_result& r) { got = r; }, [&](caf::error& e) { err = e; });
      BOOST_REQUIRE(!err);
      const auto want = reference.train_step();
      BOOST_CHECK_CLOSE(got.loss, want.loss, 1e-4);
    }
  }
  sched.run();
}

BOOST_AUTO_TEST_CASE(a_malformed_activation_is_dropped_and_counted_and_the_step_runs) {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  const runtime::profile_table profile(runtime::make_model_spec(plan.model));
  testing_config cfg;
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  {
    actors::local_job job(sys, test_cluster(), profile, plan, train_for(plan, 2), test_corpus());
    caf::scoped_actor self{sys};
    // Pipeline 0's stage 1 gets garbage bytes, then a well-formed tensor of the wrong size,
    // both claiming to be step 1, micro-batch 0.
    actors::tensor_msg bad;
    bad.bytes.assign(40, 0xab);
    self->send(job.stages()[1], bad);
    messages::tensor_header h;
    h.step = 1;
    h.shape = {1, 3};
    const std::vector<float> three(3, 1.0f);
    bad.bytes = messages::encode_tensor(h, three);
    self->send(job.stages()[1], bad);
    sched.run();
    auto rh = self->request(job.coordinator(), caf::infinite, actors::step_atom_v, int64_t{1});
    sched.run();
    std::string error;
    int64_t dropped = -1;
    rh.receive([&](actors::step_result& r) { dropped = r.dropped; },
               [&](caf::error& e) { error = sys.render(e); });
    BOOST_CHECK_EQUAL(error, "");
    BOOST_CHECK_EQUAL(dropped, 2);
  }
  sched.run();
}

BOOST_AUTO_TEST_SUITE_END()
