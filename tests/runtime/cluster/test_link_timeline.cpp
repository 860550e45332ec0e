// The fluctuation and fault script (link_timeline): its pure model and its TOML form.
#include "runtime/base/errors.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

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

BOOST_AUTO_TEST_CASE(a_partitioned_node_works_as_a_stopped_one_until_it_heals) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[node]]
at = 1
node = "e0"
action = "partition"
[[node]]
at = 3
node = "e0"
action = "heal"
)");
  // 1 s of work, 2 s cut off, then the second second of work.
  BOOST_TEST(work_duration(t.device_history(c, 4), 0, 2.0) == 4.0, tt::tolerance(1e-12));
  BOOST_TEST(t.describe(c)[0].text == "node e0 partition");
  BOOST_TEST(!t.describe(c)[0].kill);
  BOOST_TEST(t.device_history(c, 0).size() == 1u);
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

// A job's own script as a run takes it. Its time events hold from the start, and its step
// events wait. Taken at each boundary (take_injected), a step event lands at that step's real
// start, however fast the steps before went. One beyond the run never lands.
BOOST_AUTO_TEST_CASE(a_scripts_step_events_wait_for_their_steps) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto t = script(R"([[change]]
step = 3
between = ["c0", "e0"]
bandwidth = "1Mbps"
[[device]]
at = 0.5
device = "c0/0"
slowdown = 2
[[node]]
step = 1
node = "e0"
action = "stop"
[[device]]
step = 40
device = "c0/1"
slowdown = 3
)");
  const auto parts = split_step_events(t);
  BOOST_TEST(!parts.due.has_step_events());
  BOOST_TEST(parts.due.changes().empty());
  BOOST_REQUIRE(parts.due.device_changes().size() == 1u);
  BOOST_TEST(parts.due.device_changes()[0].at_s == 0.5);
  BOOST_TEST(parts.due.node_changes().empty());
  BOOST_REQUIRE(parts.pending.changes().size() == 1u);
  BOOST_REQUIRE(parts.pending.node_changes().size() == 1u);
  BOOST_REQUIRE(parts.pending.device_changes().size() == 1u);
  BOOST_TEST(*parts.pending.device_changes()[0].at_step == 39);
  // Steps that start at 0, 0.3 and 2.2 s (not where a static prediction would put them).
  link_timeline in_force = parts.due, waiting = parts.pending;
  const std::vector<double> starts{0.0, 0.3, 2.2, 2.9};
  for (size_t k = 0; k < starts.size(); ++k) {
    auto reached = take_injected(waiting, static_cast<int>(k), starts[k]);
    in_force = merged(in_force, reached.due);
    waiting = reached.pending;
  }
  BOOST_REQUIRE(in_force.node_changes().size() == 1u);
  BOOST_TEST(in_force.node_changes()[0].at_s == 0.0); // step 1
  const auto h = in_force.history(c, 0, 4);
  BOOST_REQUIRE(h.size() == 2u);
  BOOST_TEST(h[1].from_s == 2.2); // step 3's real start
  BOOST_TEST(h[1].params.bandwidth_Bps == 1e6 / 8);
  BOOST_TEST(in_force.device_history(c, 0)[1].from_s == 0.5);
  // Step 40 is beyond these four steps: still waiting, nowhere in force.
  BOOST_TEST(waiting.device_changes().size() == 1u);
  BOOST_TEST(in_force.device_history(c, 1).size() == 1u);
  BOOST_TEST(!in_force.has_step_events());
}

BOOST_AUTO_TEST_CASE(injected_events_apply_at_the_next_step_boundary) {
  const auto c = deepcee::test::actors_test_cluster();
  // Injected while step 5 (index 4) is about to start at 3.0 s: a passed step, a passed
  // time and no time at all apply at 3.0 s; a later time stays; a later step waits.
  const auto injected = parse_injected_events(R"([[change]]
step = 2
between = ["c0", "e0"]
bandwidth_scale = 0.1
[[device]]
at = 1.5
device = "c0/0"
slowdown = 2
[[node]]
node = "e0"
action = "stop"
[[change]]
at = 7.5
of = "e0"
latency = "80ms"
[[device]]
step = 9
device = "e0/0"
slowdown = 3
)",
                                              c, "i.toml");
  const auto split = take_injected(injected, 4, 3.0);
  BOOST_TEST(!split.due.has_step_events());
  BOOST_REQUIRE(split.due.changes().size() == 2u);
  BOOST_TEST(split.due.changes()[0].at_s == 3.0);
  BOOST_TEST(*split.due.changes()[0].bandwidth_scale == 0.1);
  BOOST_TEST(split.due.changes()[1].at_s == 7.5);
  BOOST_REQUIRE(split.due.device_changes().size() == 1u);
  BOOST_TEST(split.due.device_changes()[0].at_s == 3.0);
  BOOST_REQUIRE(split.due.node_changes().size() == 1u);
  BOOST_TEST(split.due.node_changes()[0].at_s == 3.0);
  // The step event of the boundary itself (step 5, index 4) is due too.
  BOOST_TEST(take_injected(link_timeline({}, {{0, 4, 0, 2}}), 4, 3.0).due.device_changes().size() ==
             1u);
  BOOST_TEST(split.pending.changes().empty());
  BOOST_REQUIRE(split.pending.device_changes().size() == 1u);
  BOOST_TEST(*split.pending.device_changes()[0].at_step == 8);
  // Taken at its own boundary, the pending event becomes due there.
  const auto later = take_injected(split.pending, 8, 6.25);
  BOOST_TEST(later.pending.empty());
  BOOST_TEST(later.due.device_changes()[0].at_s == 6.25);

  // Merged into the running script: the link from 3.0 s on carries a tenth.
  const auto before = script("[[change]]\nat = 1\nbetween = [\"c0\", \"e0\"]\nbandwidth = 80\n");
  const auto now = merged(before, split.due);
  const auto h = now.history(c, 0, 4);
  BOOST_REQUIRE(h.size() == 4u);
  BOOST_TEST(h[1].from_s == 1.0);
  BOOST_TEST(h[1].params.bandwidth_Bps == 10e6);
  BOOST_TEST(h[2].from_s == 3.0);
  BOOST_TEST(h[2].params.bandwidth_Bps == 1e6, tt::tolerance(1e-12));
  BOOST_TEST(h[3].params.latency_s == 0.08, tt::tolerance(1e-12));
  // e0's devices stop at 3.0 s; c0/0 works at half speed from then on.
  BOOST_TEST(now.device_history(c, 4).back().rate == 0.0);
  BOOST_TEST(now.device_history(c, 0).back().rate == 0.5);
  // At one time, what came later (the injection) wins over the script.
  const auto set_at_3 = script("[[change]]\nat = 3\nbetween = [\"c0\", \"e0\"]\nbandwidth = 80\n");
  const auto inj = take_injected(
      parse_event_option(R"(change = { between = ["c0", "e0"], bandwidth = 8 })", c), 4, 3.0);
  BOOST_TEST(merged(set_at_3, inj.due).history(c, 0, 4).back().params.bandwidth_Bps == 1e6);
  BOOST_CHECK_THROW(take_injected(injected, -1, 0.0), std::invalid_argument);
}

// A script that came in a message (script_update) is checked against the receiver's cluster:
// an index of a region, node or device it does not have is refused, naming the event's line.
BOOST_AUTO_TEST_CASE(a_script_from_a_message_must_fit_the_cluster) {
  const auto c = deepcee::test::actors_test_cluster();
  BOOST_CHECK_NO_THROW(check_fits(script(R"([[change]]
at = 1
between = ["cloud", "e0/2"]
bandwidth = 80
[[device]]
at = 1
device = "e0/2"
slowdown = 2
[[node]]
at = 1
node = "e0"
action = "stop"
)"),
                                  c));
  const auto refused = [&](const link_timeline& t, const std::string& what) {
    try {
      check_fits(t, c);
      BOOST_ERROR("accepted: " << what);
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  link_change far_region;
  far_region.a = {link_endpoint::scope::region, 0};
  far_region.b = {link_endpoint::scope::region, static_cast<int>(c.regions.size())};
  far_region.bandwidth_Bps = 1e6;
  far_region.line = 4;
  refused(link_timeline({far_region}), "line 4 names a region, node or device");
  link_change far_device = far_region;
  far_device.b = {link_endpoint::scope::device, static_cast<int>(c.devices.size())};
  refused(link_timeline({far_device}), "line 4");
  // With `of` (any peer) only the first end counts.
  link_change any_peer = far_device;
  any_peer.any_peer = true;
  BOOST_CHECK_NO_THROW(check_fits(link_timeline({any_peer}), c));
  refused(link_timeline({}, {{0, {}, static_cast<int>(c.devices.size()), 2.0, 9}}),
          "line 9 names a device");
  refused(link_timeline({}, {}, {{0, {}, static_cast<int>(c.nodes.size()), node_action::kill, 5}}),
          "line 5 names a node");
}

BOOST_AUTO_TEST_CASE(one_event_on_the_command_line) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto one = parse_event_option(R"(device = { device = "e0/1", slowdown = 3, step = 4 })", c);
  BOOST_REQUIRE(one.device_changes().size() == 1u);
  BOOST_TEST(one.device_changes()[0].device == 5);
  BOOST_TEST(*one.device_changes()[0].at_step == 3);
  BOOST_TEST(one.device_changes()[0].slowdown == 3.0);
  const auto node = parse_event_option(R"(node = { node = "e0", action = "kill" })", c);
  BOOST_TEST(node.node_changes().size() == 1u);
  BOOST_TEST(!node.node_changes()[0].at_step.has_value());
  const auto error = [&](const std::string& text) -> std::string {
    try {
      parse_event_option(text, c);
    } catch (const input_error& e) {
      return e.what();
    }
    return "";
  };
  BOOST_TEST(error(R"(change = { of = "moon", bandwidth = 1 })")
                 .find("--event:1: unknown region, node or device 'moon'") == 0);
  BOOST_TEST(error(R"(quake = { of = "e0" })").find("--event:1: unknown event 'quake'") == 0);
  BOOST_TEST(error(R"(change = { of = "e0", bandwidth = 1 }
node = { node = "e0", action = "stop" })")
                 .find("--event:1: --event takes one event") == 0);
  BOOST_TEST(error(R"(change = { of = "e0", bandwidth = -1 })")
                 .find("--event:1: 'bandwidth' must be positive") == 0);
  BOOST_TEST(error(R"(change = "e0")").find("--event:1: 'change' must be a table") == 0);
  // A script file still needs a time for each event; an injected one does not.
  BOOST_TEST(error_of("[[node]]\nnode = \"e0\"\naction = \"stop\"\n")
                 .find("s.toml:1: a [[node]] needs 'at'") == 0);
}

// What `deepcee inject` sends: --event lines, each one event, the k-th named in errors; any
// other source is a script.
BOOST_AUTO_TEST_CASE(an_injection_is_events_or_a_script) {
  const auto c = deepcee::test::actors_test_cluster();
  const auto two = parse_injection("--event",
                                   "device = { device = \"e0/1\", slowdown = 3 }\n"
                                   "node = { node = \"e0\", action = \"stop\" }\n",
                                   c);
  BOOST_TEST(two.device_changes().size() == 1u);
  BOOST_TEST(two.node_changes().size() == 1u);
  try {
    parse_injection("--event", "node = { node = \"e0\", action = \"stop\" }\nflood = {}\n", c);
    BOOST_ERROR("an unknown second event was accepted");
  } catch (const input_error& e) {
    BOOST_TEST(std::string(e.what()).starts_with("--event:2:"), e.what());
  }
  const auto script =
      parse_injection("events.toml", "[[device]]\ndevice = \"e0/1\"\nslowdown = 2\n", c);
  BOOST_TEST(script.device_changes().size() == 1u);
  BOOST_CHECK_THROW(
      parse_injection("events.toml", "[[device]]\ndevice = \"x9/1\"\nslowdown = 2\n", c),
      input_error);
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
