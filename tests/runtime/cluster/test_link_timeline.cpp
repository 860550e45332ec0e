// The fluctuation and fault script (link_timeline): its pure model and its TOML form.
#include "runtime/base/errors.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

// actors_test_cluster: c0/0..c0/3 in node c0 (region cloud), e0/0..e0/2 in e0 (edge).
link_timeline script(const std::string& text) {
  return parse_link_timeline(text, deepcee::test::actors_test_cluster(), "s.toml");
}

std::string error_of(const std::string& text) {
  try {
    script(text);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(link_timeline_script)

BOOST_AUTO_TEST_CASE(scales_compose_with_sets_and_only_touch_their_links) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[change]]
at = 1
between = ["cloud", "edge"]
bandwidth_scale = 0.1
[[change]]
at = 2
of = "e0"
latency_scale = 5
[[change]]
at = 3
between = ["cloud", "edge"]
bandwidth = "50Mbps"
)");
  const auto wan = c.link_between(0, 4);
  const auto h = t.history(c, 0, 4);
  BOOST_TEST(h.size() == 4u);
  BOOST_TEST(params_at(h, 0.5).bandwidth_Bps == wan.bandwidth_Bps);
  BOOST_TEST(params_at(h, 1.5).bandwidth_Bps == wan.bandwidth_Bps * 0.1, tt::tolerance(1e-12));
  BOOST_TEST(params_at(h, 2.5).latency_s == wan.latency_s * 5, tt::tolerance(1e-12));
  BOOST_TEST(params_at(h, 3.5).bandwidth_Bps == 50e6 / 8);
  BOOST_TEST(params_at(h, 3.5).latency_s == wan.latency_s * 5, tt::tolerance(1e-12));
  // `of = "e0"` reaches the links inside e0 too; the region pair does not reach c0's bus.
  BOOST_TEST(params_at(t.history(c, 4, 5), 2.5).latency_s == c.link_between(4, 5).latency_s * 5,
             tt::tolerance(1e-12));
  BOOST_TEST(t.history(c, 0, 1).size() == 1u);
}

BOOST_AUTO_TEST_CASE(jitter_is_seeded_bounded_and_ends_at_zero) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[change]]
at = 0
between = ["cloud", "edge"]
jitter = 0.2
seed = 7
[[change]]
at = 100
between = ["cloud", "edge"]
jitter = 0
)");
  const auto h = t.history(c, 0, 4);
  const double bytes = 1e6;
  const double nominal = bytes / c.link_between(0, 4).bandwidth_Bps;
  double lo = 1e9, hi = 0;
  for (int k = 0; k < 200; ++k) {
    const double d = drain_duration(h, 0.25 * k, bytes);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    BOOST_TEST(d == drain_duration(h, 0.25 * k, bytes)); // the same draw every time
  }
  // Factors in [0.8, 1.2] of the bandwidth, and they do vary.
  BOOST_TEST(lo >= nominal / 1.2 * (1 - 1e-12));
  BOOST_TEST(hi <= nominal / 0.8 * (1 + 1e-12));
  BOOST_TEST(hi - lo > 0.2 * nominal);
  BOOST_TEST(drain_duration(h, 150, bytes) == nominal, tt::tolerance(1e-12));
  // Another pair draws other factors from the same seed.
  BOOST_TEST(drain_duration(t.history(c, 1, 5), 1.0, bytes) != drain_duration(h, 1.0, bytes));
}

BOOST_AUTO_TEST_CASE(slowdowns_and_stops_stretch_work) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[device]]
at = 1
device = "e0/1"
slowdown = 3
[[node]]
at = 2
node = "e0"
action = "stop"
[[node]]
at = 4
node = "e0"
action = "resume"
)");
  const auto h = t.device_history(c, 5);
  BOOST_TEST(work_duration(h, 0, 0.5) == 0.5);
  // 1 s at full speed, 1 s at a third, stopped 2 s, then 1/3 s of work left at a third.
  BOOST_TEST(work_duration(h, 0, 1.0 + 1.0 / 3 + 1.0 / 3) == 5.0, tt::tolerance(1e-12));
  // A device of the stopped node that is not slowed only waits for the resume.
  BOOST_TEST(work_duration(t.device_history(c, 4), 2.5, 1.0) == 2.5, tt::tolerance(1e-12));
  // The cloud node is untouched.
  BOOST_TEST(t.device_history(c, 0).size() == 1u);
  const auto killed = script("[[node]]\nat = 1\nnode = \"e0\"\naction = \"kill\"\n");
  BOOST_TEST(std::isinf(work_duration(killed.device_history(c, 4), 0.5, 1.0)));
  BOOST_TEST(killed.device_history(c, 4).back().killed);
}

BOOST_AUTO_TEST_CASE(step_events_land_when_their_step_starts) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[change]]
step = 3
between = ["c0", "e0"]
bandwidth = "1Mbps"
[[device]]
step = 2
device = "c0/0"
slowdown = 2
)");
  BOOST_TEST(t.has_step_events());
  // Before step 3 (index 2) has started the link change is not known.
  BOOST_TEST(t.resolve_steps({0.0, 0.7}).history(c, 0, 4).size() == 1u);
  const auto known = t.resolve_steps({0.0, 0.7, 1.9});
  BOOST_TEST(!known.has_step_events());
  const auto h = known.history(c, 0, 4);
  BOOST_TEST(h.size() == 2u);
  BOOST_TEST(h[1].from_s == 1.9);
  BOOST_TEST(h[1].params.bandwidth_Bps == 1e6 / 8);
  BOOST_TEST(known.device_history(c, 0)[1].from_s == 0.7);
  BOOST_TEST(known.device_history(c, 0)[1].rate == 0.5);
}

BOOST_AUTO_TEST_CASE(bad_scripts_name_file_and_line) {
  BOOST_TEST(error_of("[[device]]\nat = 1\ndevice = \"mars/0\"\nslowdown = 2\n")
                 .find("s.toml:3: unknown device 'mars/0'") == 0);
  BOOST_TEST(error_of("[[node]]\nat = 1\nnode = \"n9\"\naction = \"stop\"\n")
                 .find("s.toml:3: unknown node 'n9'") == 0);
  BOOST_TEST(error_of("[[change]]\nat = 1\nof = \"moon\"\nbandwidth = 1\n")
                 .find("s.toml:3: unknown region, node or device 'moon'") == 0);
  BOOST_TEST(error_of("[[change]]\nat = -1\nof = \"e0\"\nbandwidth = 1\n")
                 .find("s.toml:2: 'at' must not be negative") == 0);
  BOOST_TEST(error_of("[[change]]\nstep = 0\nof = \"e0\"\nbandwidth = 1\n")
                 .find("s.toml:2: 'step' must be a step number from 1") == 0);
  BOOST_TEST(error_of("[[change]]\nat = 1\nof = \"e0\"\nbandwidth_scale = 0\n")
                 .find("s.toml:4: 'bandwidth_scale' must be positive") == 0);
  BOOST_TEST(error_of("[[change]]\nat = 1\nstep = 2\nof = \"e0\"\nbandwidth = 1\n")
                 .find("s.toml:1: a [[change]] needs 'at'") == 0);
  BOOST_TEST(error_of("[[change]]\nat = 1\nof = \"e0\"\njitter = 1.5\n")
                 .find("s.toml:4: 'jitter' must be a fraction") == 0);
  BOOST_TEST(error_of("[[node]]\nat = 1\nnode = \"e0\"\naction = \"explode\"\n")
                 .find("s.toml:4: unknown action 'explode'") == 0);
  BOOST_TEST(error_of("[[device]]\nat = 1\ndevice = \"e0/0\"\nslowdown = -2\n")
                 .find("s.toml:4: 'slowdown' must be positive") == 0);
  BOOST_TEST(error_of("[[earthquake]]\nat = 1\n").find("s.toml:1: unknown key 'earthquake'") == 0);
}

BOOST_AUTO_TEST_SUITE_END()
