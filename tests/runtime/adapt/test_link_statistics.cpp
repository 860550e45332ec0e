// What the inspector shows of the links: every directed pair the plan in force sends on,
// with the monitor's estimates beside the plan's figures and the bytes each pair carried.
#include <boost/test/unit_test.hpp>

#include "runtime/adapt/adaptive_simulation.hpp"
#include "runtime/adapt/link_statistics.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "tests/runtime/adapt/adapt_fixtures.hpp"

using namespace deepcee::runtime;
using namespace deepcee::test;
namespace tt = boost::test_tools;

namespace {

const link_report& find(const std::vector<link_report>& links, int from, int to) {
  for (const auto& l : links)
    if (l.from == from && l.to == to)
      return l;
  throw std::logic_error("no report for " + std::to_string(from) + "->" + std::to_string(to));
}

} // namespace

BOOST_AUTO_TEST_SUITE(link_statistics_of_transfers)

BOOST_AUTO_TEST_CASE(each_direction_of_a_pair_counts_its_own_transfers) {
  link_statistics stats;
  stats.add(0, 4, 1000);
  stats.add(4, 0, 10);
  stats.add(0, 4, 3000);
  const auto& links = stats.links();
  BOOST_TEST(links.size() == 2u);
  BOOST_TEST(links.at({0, 4}).transfers == 2);
  BOOST_TEST(links.at({0, 4}).bytes == 4000.0);
  BOOST_TEST(links.at({4, 0}).transfers == 1);
  BOOST_TEST(links.at({4, 0}).bytes == 10.0);
}

BOOST_AUTO_TEST_CASE(reports_cover_both_directions_of_every_boundary_of_the_plan) {
  four_pipes_job f;
  const environment_monitor m(f.c, f.profile, f.p);
  const auto links = link_reports(m, {}, f.p);
  // Four pipelines of two stages: one boundary each, two directions.
  BOOST_TEST(links.size() == 8u);
  for (int k = 0; k < 4; ++k) {
    const auto& fwd = find(links, 2 * k, 2 * k + 1);
    const auto& bwd = find(links, 2 * k + 1, 2 * k);
    for (const auto* l : {&fwd, &bwd}) {
      // No sample yet: the plan's figures, and nothing carried.
      BOOST_TEST(l->samples == 0);
      BOOST_TEST((l->estimated == l->assumed));
      BOOST_TEST((l->assumed == f.c.link_between(l->from, l->to)));
      BOOST_TEST(l->carried.transfers == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(estimates_are_the_monitors_and_follow_a_drop_on_one_pair_only) {
  four_pipes_job f;
  environment_monitor m(f.c, f.profile, f.p);
  link_statistics stats;
  const auto drop = parse_link_timeline(
      "[[change]]\nat = 0\nbetween = [\"n0/0\", \"n0/1\"]\nbandwidth = \"250Mbps\"\n", f.c,
      "drop.toml");
  for (int k = 0; k < 3; ++k)
    for (const auto& o : observed_transfers(f.c, f.model, f.p, drop, k * f.step_s, f.step_s)) {
      m.observe(o);
      stats.add(o.from, o.to, o.bytes);
    }
  const auto links = link_reports(m, stats, f.p);
  BOOST_TEST(links.size() == 8u);
  for (const auto& l : links) {
    BOOST_TEST(l.samples > 0);
    BOOST_TEST(l.carried.transfers > 0);
    BOOST_TEST(l.estimated.latency_s == l.assumed.latency_s, tt::tolerance(1e-9));
    const bool dropped = l.from < 2 && l.to < 2; // node n0's pair, both directions
    const double expected = dropped ? 250e6 / 8 : l.assumed.bandwidth_Bps;
    BOOST_TEST(l.estimated.bandwidth_Bps == expected, tt::tolerance(1e-9));
    BOOST_TEST(l.drifted == dropped);
  }
  // Each direction counts its own transfers: forward activations and backward gradients
  // of the same size, one each per micro-batch and step.
  BOOST_TEST(find(links, 0, 1).carried.transfers == find(links, 1, 0).carried.transfers);
  BOOST_TEST(find(links, 0, 1).carried.transfers == 3 * f.p.pipelines[0].micro_batches);
}

BOOST_AUTO_TEST_SUITE_END()
