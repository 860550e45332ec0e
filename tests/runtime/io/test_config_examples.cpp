// The example link timeline and measured profile in configs/ (documented in docs/formats.md)
// load and mean what their comments say.
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/io/profile_toml.hpp"
#include "tests/support/clusters.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(config_examples_suite)

BOOST_AUTO_TEST_CASE(the_example_timeline_slows_the_wan_then_restores_it) {
  const cluster c = load_cluster(deepcee::test::cluster_file("cee-small"));
  const link_timeline t =
      load_link_timeline(deepcee::test::configs_dir() / "timelines/cee-small-wan-drop.toml", c);
  BOOST_TEST_REQUIRE(t.changes().size() == 3u);
  const int cloud = *c.find_device("cloud0/0"), cloud1 = *c.find_device("cloud0/1");
  const int edge = *c.find_device("edge0/0");
  // Sorted by time: the WAN drop at 2 s, the PCIe change at 5 s, the recovery at 10 s.
  BOOST_TEST(t.changes()[0].at_s == 2.0);
  BOOST_TEST(*t.changes()[0].bandwidth_Bps == 10e6 / 8, tt::tolerance(1e-12));
  BOOST_TEST(*t.changes()[0].latency_s == 0.120, tt::tolerance(1e-12));
  BOOST_TEST(t.changes()[1].at_s == 5.0);
  BOOST_TEST(*t.changes()[1].bandwidth_Bps == 4e9, tt::tolerance(1e-12));
  BOOST_TEST(!t.changes()[1].latency_s.has_value());
  BOOST_TEST(t.changes()[2].at_s == 10.0);
  // The pairs they touch: the cluster's link, then one piece per change.
  const auto wan = t.history(c, cloud, edge);
  BOOST_TEST_REQUIRE(wan.size() == 3u);
  BOOST_TEST(wan[1].from_s == 2.0);
  BOOST_TEST(wan[1].params.bandwidth_Bps == 10e6 / 8, tt::tolerance(1e-12));
  BOOST_TEST(wan[2].from_s == 10.0);
  BOOST_TEST(wan[2].params.bandwidth_Bps == 100e6 / 8, tt::tolerance(1e-12));
  const auto pcie = t.history(c, cloud, cloud1);
  BOOST_TEST_REQUIRE(pcie.size() == 2u);
  BOOST_TEST(pcie[1].params.bandwidth_Bps == 4e9, tt::tolerance(1e-12));
  BOOST_TEST(pcie[1].params.latency_s == pcie[0].params.latency_s);
}

BOOST_AUTO_TEST_CASE(the_example_profile_replaces_the_estimates_it_measures) {
  const model_spec model = make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m");
  const profile_table measured(
      model, {},
      load_measured_profile(deepcee::test::configs_dir() / "profiles/gpt2-124m-measured.toml"));
  const profile_table estimated(model);
  const int block = 1, head = static_cast<int>(model.layers.size()) - 1;
  const layer_cost a100 = measured.cost("A100-80GB", block, 4);
  BOOST_TEST(a100.measured);
  BOOST_TEST(a100.f_s == 0.0031, tt::tolerance(1e-9));
  BOOST_TEST(a100.b_s == 0.0034, tt::tolerance(1e-9));
  BOOST_TEST(a100.w_s == 0.0029, tt::tolerance(1e-9));
  BOOST_TEST(a100.act_until_b == 150'000'000);
  BOOST_TEST(measured.cost("T4", block, 4).f_s == 0.0231, tt::tolerance(1e-9));
  BOOST_TEST(measured.cost("T4", head, 4).w_s == 0.0091, tt::tolerance(1e-9));
  // A pair it does not measure keeps the roofline estimate.
  BOOST_TEST(!measured.cost("RTX3090", block, 4).measured);
  BOOST_TEST(measured.cost("RTX3090", block, 4).f_s == estimated.cost("RTX3090", block, 4).f_s);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(measured_example_suite)

// configs/profiles/cpu-small-measured.toml, written by deepcee profile on three loopback
// nodes of cpu-loopback.toml: complete, and its links are that cluster's directed pairs.
BOOST_AUTO_TEST_CASE(the_measured_cpu_profile_is_complete_and_fits_its_cluster) {
  const auto p =
      load_measured_profile(deepcee::test::configs_dir() / "profiles/cpu-small-measured.toml");
  BOOST_TEST(p.format_version == profile_format_version);
  BOOST_TEST(p.model == "small");
  BOOST_TEST_REQUIRE(p.devices.size() == 1u);
  BOOST_TEST(p.devices[0].kind == "CPU");
  BOOST_TEST(p.entries.size() == 3 * p.devices[0].micro_batches.size());
  BOOST_TEST(p.links.size() == 6u);
  BOOST_TEST(p.optimizers.size() == 3u);
  cluster c = load_cluster(deepcee::test::cluster_file("cpu-loopback"));
  require_profile_covers(p, c.devices);
  const double wan_latency = c.link_between(0, 1).latency_s;
  apply_measured_links(c, p);
  BOOST_TEST(c.link_between(0, 1).latency_s == p.links[0].latency_s);
  BOOST_TEST(c.link_between(0, 1).latency_s != wan_latency);
  const profile_table table(make_model_spec(*model_preset("small"), "small"), {}, p);
  BOOST_TEST(table.cost("CPU", 1, 2).measured);
}

BOOST_AUTO_TEST_SUITE_END()
