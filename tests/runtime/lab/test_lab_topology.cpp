// The network lab as values: a cluster's namespaces, links, addresses, rates and routes, the
// commands that build it, and what a script does to it. No root needed.
#include "runtime/base/errors.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/lab/lab_script.hpp"
#include "runtime/lab/lab_topology.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>

using namespace deepcee::runtime;

namespace {

/// Two regions: a (n0 with a 50 Mbps nic, n1 with none) and b (n2, 20 Mbps), a 10 Mbps WAN
/// with a directed override that makes b -> a 8 Mbps.
cluster lab_cluster() {
  return parse_cluster(R"(
name = "lab-test"
[links]
same_region = { bandwidth = "1Gbps", latency = "1ms" }
cross_region = { bandwidth = "10Mbps", latency = "20ms" }
[[region]]
name = "a"
tier = "edge"
[[region]]
name = "b"
tier = "edge"
[[node]]
name = "n0"
region = "a"
nic = "50Mbps"
devices = [{ kind = "T4" }]
[[node]]
name = "n1"
region = "a"
devices = [{ kind = "T4" }]
[[node]]
name = "n2"
region = "b"
nic = "20Mbps"
devices = [{ kind = "T4" }]
[[link]]
from = "b"
to = "a"
bandwidth = "8Mbps"
)",
                       "lab.toml");
}

const lab_host big_host{8, 64e9};

lab_topology lab_of(const cluster& c) {
  return plan_lab(c, "tst", big_host, {}, "lab.toml");
}

std::string error_of(auto f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

bool has_command(const std::vector<std::vector<std::string>>& cmds,
                 const std::vector<std::string>& cmd) {
  return std::find(cmds.begin(), cmds.end(), cmd) != cmds.end();
}

} // namespace

BOOST_AUTO_TEST_SUITE(lab_topology_plan)

BOOST_AUTO_TEST_CASE(one_namespace_per_node_and_region_with_prefixed_names) {
  const auto t = lab_of(lab_cluster());
  BOOST_TEST(t.namespaces() ==
             (std::vector<std::string>{"tst-r0", "tst-r1", "tst-n0", "tst-n1", "tst-n2"}));
  BOOST_TEST(t.nodes[0].address == "10.99.0.2");
  BOOST_TEST(t.nodes[1].address == "10.99.0.3");
  BOOST_TEST(t.nodes[2].address == "10.99.1.2");
  BOOST_TEST(t.routers[1].address == "10.99.1.1/24");
  for (const auto& l : t.links)
    for (const auto* p : {&l.a, &l.b}) {
      BOOST_TEST(p->name.starts_with("tst-"));
      BOOST_TEST(p->name.size() <= 15u);
      BOOST_TEST(p->netns.starts_with("tst-"));
    }
}

BOOST_AUTO_TEST_CASE(node_interfaces_take_their_nic_each_way_and_one_wan_per_region_pair) {
  const auto t = lab_of(lab_cluster());
  BOOST_REQUIRE_EQUAL(t.links.size(), 4u); // three nodes, one region pair
  BOOST_TEST(*t.links[0].a.rate_Bps == 50e6 / 8);
  BOOST_TEST(*t.links[0].b.rate_Bps == 50e6 / 8);
  BOOST_TEST(!t.links[1].a.rate_Bps); // no nic: unshaped
  BOOST_TEST(*t.links[2].b.rate_Bps == 20e6 / 8);
  const auto& wan = t.links[3];
  BOOST_TEST((wan.what == lab_link::kind::wan));
  BOOST_TEST(wan.label == "wan a<->b");
  BOOST_TEST(*wan.a.rate_Bps == 10e6 / 8); // a -> b: the default
  BOOST_TEST(*wan.b.rate_Bps == 8e6 / 8);  // b -> a: the directed override
  BOOST_TEST(wan.a.netns == "tst-r0");
  BOOST_TEST(wan.b.netns == "tst-r1");
}

BOOST_AUTO_TEST_CASE(three_regions_get_three_paths_and_routes_through_them) {
  const auto c = parse_cluster(R"(
name = "three"
[[region]]
name = "x"
tier = "edge"
[[region]]
name = "y"
tier = "edge"
[[region]]
name = "z"
tier = "edge"
[[node]]
name = "a"
region = "x"
devices = [{ kind = "T4" }]
[[node]]
name = "b"
region = "y"
devices = [{ kind = "T4" }]
[[node]]
name = "c"
region = "z"
devices = [{ kind = "T4" }]
)",
                               "three.toml");
  const auto t = lab_of(c);
  BOOST_TEST(std::count_if(t.links.begin(), t.links.end(),
                           [](const lab_link& l) { return l.what == lab_link::kind::wan; }) == 3);
  // Router x reaches z's nodes through the x-z path, whose far end is 10.98.0.6.
  BOOST_TEST(std::count(t.routes.begin(), t.routes.end(),
                        lab_route{"tst-r0", "10.99.2.0/24", "10.98.0.6"}) == 1);
  BOOST_TEST(std::count(t.routes.begin(), t.routes.end(),
                        lab_route{"tst-n1", "default", "10.99.1.1"}) == 1);
}

BOOST_AUTO_TEST_CASE(build_commands_make_namespaces_first_and_shape_with_tbf) {
  const auto t = lab_of(lab_cluster());
  const auto cmds = lab_build_commands(t);
  BOOST_TEST((cmds.front() == std::vector<std::string>{"ip", "netns", "add", "tst-r0"}));
  BOOST_TEST(has_command(cmds, {"ip", "-n", "tst-n0", "link", "add", "tst-nic", "type", "veth",
                                "peer", "name", "tst-n0", "netns", "tst-r0"}));
  BOOST_TEST(
      has_command(cmds, {"ip", "-n", "tst-r0", "link", "set", "tst-n0", "master", "tst-br"}));
  BOOST_TEST(has_command(cmds, shape_command(t.links[3].b, 1e6)));
  const auto shape = shape_command(t.links[0].a, 50e6 / 8);
  BOOST_TEST(shape[10] == "50000000bit");
  BOOST_TEST(shape[8] == "tbf");
  BOOST_TEST(t.links[0].a.host_end); // the node's own end holds its sockets' bytes
  BOOST_TEST(!t.links[0].b.host_end);
  BOOST_TEST(shape.back() == "4194304");
  BOOST_TEST(shape_command(t.links[0].b, 50e6 / 8).back() == "625000");
  // No command names a shaped port before it exists, and routes come last.
  BOOST_TEST(cmds.back()[3] == "route");
}

BOOST_AUTO_TEST_CASE(a_healed_node_gets_its_interface_and_routes_back) {
  const auto t = lab_of(lab_cluster());
  BOOST_TEST(
      (node_down_commands(t, 2) == std::vector<std::vector<std::string>>{
                                       {"ip", "-n", "tst-n2", "link", "set", "tst-nic", "down"}}));
  BOOST_TEST((node_up_commands(t, 2) ==
              std::vector<std::vector<std::string>>{
                  {"ip", "-n", "tst-n2", "link", "set", "tst-nic", "up"},
                  {"ip", "-n", "tst-n2", "route", "replace", "default", "via", "10.99.1.1"}}));
}

BOOST_AUTO_TEST_CASE(token_buckets_hold_two_frames_and_a_tenth_of_a_second) {
  BOOST_TEST(tbf_for(1e6 / 8).burst_bytes == 2.0 * 1514);
  BOOST_TEST(tbf_for(20e6 / 8).burst_bytes == 2.0 * 1514);
  BOOST_TEST(tbf_for(1e9 / 8).burst_bytes == 1e9 / 8 * 0.001);
  BOOST_TEST(tbf_for(10e6 / 8).limit_bytes == 10e6 / 8 * 0.1);
  BOOST_TEST(tbf_for(10e6 / 8, true).limit_bytes == host_queue_bytes);
  BOOST_TEST(tbf_for(1e9 / 8, true).limit_bytes == 1e9 / 8 * 0.1);
  BOOST_TEST(tbf_for(100e6 / 8).limit_bytes == 100e6 / 8 * 0.1);
  BOOST_TEST(tc_rate(12.5e6) == "100000000bit");
}

BOOST_AUTO_TEST_CASE(refuses_a_cluster_larger_than_the_host_and_bad_prefixes) {
  const auto big = load_cluster(deepcee::test::cluster_file("cee-1024"));
  BOOST_TEST(error_of([&] {
               plan_lab(big, "tst", big_host, {}, "cee-1024.toml");
             }).starts_with("cee-1024.toml: cluster 'cee-1024' has"));
  BOOST_TEST(max_lab_nodes({2, 64e9}) == 8);
  BOOST_TEST(max_lab_nodes({64, 64e9}) == 64);
  BOOST_TEST(max_lab_nodes({8, 1e9}) == 3); // 256 MiB a node
  BOOST_TEST(error_of([&] { plan_lab(lab_cluster(), "tst", {1, 0.5e9}, {}, "lab.toml"); }) != "");
  for (const char* bad : {"", "Dcl", "1ab", "abcdefg", "a-b"})
    BOOST_TEST(error_of([&] { check_lab_prefix(bad); }) != "", bad);
  BOOST_TEST(error_of([] { check_lab_prefix("dcl2"); }) == "");
}

BOOST_AUTO_TEST_CASE(cpu_limits_go_to_the_node_and_slowdowns_divide_them) {
  const auto t = plan_lab(lab_cluster(), "tst", big_host, {std::nullopt, 2.0}, "lab.toml");
  BOOST_TEST(!t.nodes[0].cpu_cores);
  BOOST_TEST(*t.nodes[1].cpu_cores == 2.0);
  BOOST_TEST(*cpu_under(t.nodes[1], 4) == 0.5);
  BOOST_TEST(*cpu_under(t.nodes[0], 3) == 1.0 / 3); // no limit of its own: one core's share
  BOOST_TEST(!cpu_under(t.nodes[0], 1));
  BOOST_TEST(cpu_quota_us(std::nullopt, 100000) == -1);
  BOOST_TEST(cpu_quota_us(0.5, 100000) == 50000);
  BOOST_TEST(cpu_quota_us(1e-6, 100000) == 1000);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lab_script_events)

namespace {

std::vector<lab_event> events(const std::string& text) {
  const auto c = lab_cluster();
  return lab_events(parse_link_timeline(text, c, "s.toml"), c, lab_of(c), "s.toml");
}

} // namespace

BOOST_AUTO_TEST_CASE(a_region_pair_change_reshapes_its_wan_path_both_ways) {
  const auto e = events(R"([[change]]
step = 20
between = ["a", "b"]
bandwidth = "2Mbps"
latency = "80ms"
)");
  BOOST_REQUIRE_EQUAL(e.size(), 1u);
  BOOST_TEST((e[0].ports == std::vector<lab_port_ref>{{3, 0}, {3, 1}}));
  BOOST_TEST(*e[0].at_step == 19);
  BOOST_TEST(*next_rate(e[0], 1e6) == 2e6 / 8);
  BOOST_TEST(e[0].left_out == std::vector<std::string>{"latency"});
  BOOST_TEST(e[0].text.find("a<->b") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_change_naming_a_node_reshapes_its_interface) {
  const auto e = events(R"([[change]]
at = 5
between = ["n0", "n2"]
bandwidth_scale = 0.1
[[change]]
at = 1
of = "n2/0"
bandwidth = "1Mbps"
)");
  BOOST_REQUIRE_EQUAL(e.size(), 2u);
  BOOST_TEST(e[0].at_s == 1); // time order
  BOOST_TEST((e[0].ports == std::vector<lab_port_ref>{{2, 0}, {2, 1}}));
  BOOST_TEST((e[1].ports == std::vector<lab_port_ref>{{0, 0}, {0, 1}, {2, 0}, {2, 1}}));
  BOOST_TEST(*next_rate(e[1], 50e6 / 8) == 5e6 / 8);
}

BOOST_AUTO_TEST_CASE(device_and_node_events_become_cpu_signals_and_partitions) {
  const auto e = events(R"([[device]]
step = 3
device = "n2/0"
slowdown = 3
[[node]]
step = 4
node = "n1"
action = "partition"
[[node]]
step = 5
node = "n1"
action = "heal"
[[node]]
step = 6
node = "n0"
action = "stop"
)");
  BOOST_REQUIRE_EQUAL(e.size(), 4u);
  BOOST_TEST((e[0].what == lab_event::kind::cpu));
  BOOST_TEST(e[0].node == 2);
  BOOST_TEST(e[0].slowdown == 3);
  BOOST_TEST((e[1].what == lab_event::kind::partition));
  BOOST_TEST(e[1].text == "node n1 partition");
  BOOST_TEST((e[2].what == lab_event::kind::heal));
  BOOST_TEST((e[3].what == lab_event::kind::stop));
}

BOOST_AUTO_TEST_CASE(refuses_changes_that_name_no_path_or_scale_an_unshaped_port) {
  BOOST_TEST(error_of([] {
               events("[[change]]\nat = 1\nbetween = [\"a\", \"a\"]\nbandwidth = 1\n");
             }) == "s.toml:1: this change names no path of the lab (its ends share a region)");
  BOOST_TEST(error_of([] {
               events("[[change]]\nat = 1\nof = \"n1\"\nbandwidth_scale = 0.5\n");
             }).find("node n1, which the lab leaves unshaped") != std::string::npos);
  BOOST_TEST(error_of([] {
               events("[[node]]\nat = 1\nnode = \"n9\"\naction = \"partition\"\n");
             }) == "s.toml:3: unknown node 'n9'");
}

BOOST_AUTO_TEST_SUITE_END()
