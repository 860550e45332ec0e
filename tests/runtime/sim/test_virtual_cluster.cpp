// The emulated cluster of the actor runtime's virtual time: what it hands each stage.
#include "runtime/io/cluster_toml.hpp"
#include "runtime/sim/virtual_cluster.hpp"
#include "tests/support/clusters.hpp"
#include "tests/support/plans.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;

using deepcee::test::one_device_stage;

BOOST_AUTO_TEST_SUITE(virtual_cluster_schedules)

BOOST_AUTO_TEST_CASE(replicated_pipelines_get_the_schedule_they_share) {
  // Two pipelines of the same kind, shape and costs: the simulator's world schedules the
  // first and lets the second share it; both must still see every stage's op list.
  plan p;
  p.strategy = "test";
  p.model = model_config{4, 64, 4, 32, 256};
  p.micro_batch_size = 2;
  for (int q = 0; q < 2; ++q) {
    pipeline_plan pp;
    pp.micro_batches = 4;
    pp.schedule = schedule_kind::zb_h1;
    pp.stages = {one_device_stage(2 * q, 0, 3), one_device_stage(2 * q + 1, 3, 6)};
    p.pipelines.push_back(pp);
  }
  const auto spec = make_model_spec(p.model);
  const profile_table profile(spec);
  const virtual_cluster vc(deepcee::test::four_a100_cluster(), spec, profile, p);
  const auto& first = vc.schedule(0);
  const auto& replica = vc.schedule(1);
  BOOST_REQUIRE_EQUAL(first.stages.size(), 2u);
  BOOST_REQUIRE_EQUAL(replica.stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    BOOST_CHECK_EQUAL(replica.stages[s].size(), 3u * 4u); // F, B and W of 4 micro-batches
    BOOST_CHECK(replica.stages[s] == first.stages[s]);
  }
}

BOOST_AUTO_TEST_SUITE_END()
