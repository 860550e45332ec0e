// The stage order search (stage_order.hpp): block moves keep every stage and move every
// pipeline alike, and the planner finds a plan that puts a slow node in the middle of a
// pipeline where that is fastest: on one region of an A10, two L4 nodes and a node of two
// T4s, the T4s belong between the L4s (the last L4 takes the head), not first or last.
#include "runtime/io/cluster_toml.hpp"
#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/planner/stage_order.hpp"
#include "runtime/sim/simulator.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace deepcee::runtime;

namespace {

constexpr const char* four_nodes = R"(
name = "a10-l4-t4"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "2500Mbps", latency = "0.5ms" }
[[region]]
name = "r0"
tier = "cloud"
[[node]]
name = "l4a"
region = "r0"
devices = [{ kind = "L4", count = 1 }]
[[node]]
name = "l4b"
region = "r0"
devices = [{ kind = "L4", count = 1 }]
[[node]]
name = "t4"
region = "r0"
devices = [{ kind = "T4", count = 2 }]
[[node]]
name = "a10"
region = "r0"
devices = [{ kind = "A10", count = 1 }]
)";

std::vector<std::vector<int>> sorted_stages(const pipeline_layout& l) {
  auto s = l.stages;
  std::sort(s.begin(), s.end());
  return s;
}

/// The fastest simulated plan of `layout` over every micro-batch size, schedule and encoding
/// that build_plan makes of it.
double best_rate_of(const cluster& c, const profile_table& profiles,
                    const std::vector<pipeline_layout>& layout, int batch) {
  cost_cache costs(c, profiles);
  double best = 0;
  for (int b : divisors_between(batch, 2, batch))
    for (schedule_kind k : {schedule_kind::one_f_one_b, schedule_kind::zb_h1, schedule_kind::zb_h2,
                            schedule_kind::greedy})
      for (compression comp : {compression::none, compression::bf16, compression::int8}) {
        build_options o;
        o.micro_batch_size = b;
        o.schedule = k;
        o.inter_node = comp;
        if (auto p = build_plan(costs, layout, batch, o)) {
          const sim_result s = simulate(c, profiles.model(), profiles, *p);
          if (!s.out_of_memory)
            best = std::max(best, s.samples_per_s);
        }
      }
  return best;
}

} // namespace

BOOST_AUTO_TEST_SUITE(planner_order)

BOOST_AUTO_TEST_CASE(block_moves_keep_the_stages_and_move_every_pipeline_alike) {
  const cluster c = parse_cluster(four_nodes, "test");
  // Two pipelines: stage k of each on the same kind (L4, L4, T4 | A10 at the front).
  const std::vector<pipeline_layout> layout{{{{4}, {0}, {1}, {2}}}, {{{4}, {0}, {1}, {3}}}};
  const auto orders = stage_orders_moved(c, layout);
  // Blocks: A10, the two L4s, the T4; each to every other place: 3 + 2 + 3.
  BOOST_TEST(orders.size() == 8u);
  bool t4_between_l4s = false;
  for (const auto& o : orders) {
    BOOST_TEST(o.size() == layout.size());
    BOOST_TEST((o[0].stages != layout[0].stages));
    for (size_t pi = 0; pi < o.size(); ++pi) {
      BOOST_TEST((sorted_stages(o[pi]) == sorted_stages(layout[pi])));
      for (size_t k = 0; k < o[pi].stages.size(); ++k) // the pipelines moved alike
        BOOST_TEST(c.devices[size_t(o[pi].stages[k].front())].kind ==
                   c.devices[size_t(o[0].stages[k].front())].kind);
    }
    t4_between_l4s =
        t4_between_l4s || o[0].stages == std::vector<std::vector<int>>{{4}, {0}, {2}, {1}};
  }
  BOOST_TEST(t4_between_l4s);
  // Pipelines of different depths are not reordered.
  BOOST_TEST(stage_orders_moved(c, {{{{4}, {0}}}, {{{1}}}}).empty());
}

BOOST_AUTO_TEST_CASE(a_slow_node_goes_where_it_is_fastest) {
  const cluster c = parse_cluster(four_nodes, "test");
  profile_table profiles(make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m"));
  planner_options o;
  o.model_name = "gpt2-124m";
  o.global_batch = 32;
  o.time_limit_s = -1;
  const planner_report r = plan_training(c, profiles, o);
  // The order a user would try by hand: A10, L4, the T4s, L4.
  const double by_hand = best_rate_of(c, profiles, {{{{4}, {0}, {2, 3}, {1}}}}, 32);
  BOOST_TEST_MESSAGE("planner " << r.best_sim.samples_per_s << " samples/s, by hand " << by_hand);
  BOOST_TEST(by_hand > 0);
  BOOST_TEST(r.best_sim.samples_per_s >= by_hand * (1 - 1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
