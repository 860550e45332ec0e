// The link profiler's fit: round trips of several sizes to latency + bytes / bandwidth.
#include "runtime/cluster/link_fit.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(link_fit_suite)

BOOST_AUTO_TEST_CASE(exact_round_trips_give_back_the_link) {
  // 0.5 ms each way, 100 MB/s one way; the reply is free.
  std::vector<transfer_sample> s;
  for (double bytes : {64.0, 4096.0, 65536.0, 1048576.0})
    s.push_back({bytes, 2 * 0.5e-3 + bytes / 100e6});
  const link_fit f = fit_round_trips(s);
  BOOST_TEST(f.latency_s == 0.5e-3, tt::tolerance(1e-9));
  BOOST_TEST(f.bandwidth_Bps == 100e6, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(noise_is_averaged_by_least_squares) {
  std::vector<transfer_sample> s = {
      {1e3, 2.1e-3 + 1e-5}, {1e3, 1.9e-3 + 1e-5}, {1e6, 2.1e-3 + 1e-2}, {1e6, 1.9e-3 + 1e-2}};
  const link_fit f = fit_round_trips(s);
  BOOST_TEST(f.latency_s == 1e-3, tt::tolerance(1e-9));
  BOOST_TEST(f.bandwidth_Bps == 1e8, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(one_size_or_no_growth_cannot_be_fitted) {
  BOOST_CHECK_THROW(fit_round_trips({{100, 1e-3}, {100, 2e-3}}), std::invalid_argument);
  BOOST_CHECK_THROW(fit_round_trips({{100, 2e-3}, {1e6, 1e-3}}), std::invalid_argument);
  BOOST_CHECK_THROW(fit_round_trips({}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(measured_links_override_the_cluster_per_direction) {
  cluster c = parse_cluster(R"(name = "two"
[links]
same_region = { bandwidth = "1Gbps", latency = "1ms" }
[[region]]
name = "r"
tier = "edge"
[[node]]
name = "a"
region = "r"
devices = [{ kind = "CPU", count = 1 }]
[[node]]
name = "b"
region = "r"
devices = [{ kind = "CPU", count = 1 }]
)",
                            "c.toml");
  measured_profile p;
  p.source = "p.toml";
  p.links = {{"a", "b", 2e-4, 5e8, 7}};
  apply_measured_links(c, p);
  BOOST_TEST(c.link_between(0, 1).latency_s == 2e-4);
  BOOST_TEST(c.link_between(0, 1).bandwidth_Bps == 5e8);
  BOOST_TEST(c.link_between(1, 0).latency_s == 1e-3, tt::tolerance(1e-12)); // not measured
  p.links = {{"a", "z", 2e-4, 5e8, 9}};
  try {
    apply_measured_links(c, p);
    BOOST_FAIL("a link to an unknown node was accepted");
  } catch (const std::exception& e) {
    BOOST_TEST(std::string(e.what()).find("p.toml:9:") == 0u, e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
