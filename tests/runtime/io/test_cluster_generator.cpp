// The cluster generator that the adversarial benchmark and the planner's property tests draw
// from: the same seed gives the same cluster, seeds give different ones of every shape, sizes
// stay within the bounds asked for, and the model drawn fits the cluster's memory.
#include "runtime/io/cluster_generator.hpp"
#include "runtime/planner/planner.hpp"

#include <boost/test/unit_test.hpp>

#include <set>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(cluster_generator)

BOOST_AUTO_TEST_CASE(same_seed_same_cluster) {
  BOOST_TEST(generate_cluster(7).toml == generate_cluster(7).toml);
  BOOST_TEST(generate_cluster(7).toml != generate_cluster(8).toml);
}

BOOST_AUTO_TEST_CASE(every_shape_within_bounds_and_the_model_fits) {
  std::set<region_shape> shapes;
  std::set<std::string> models;
  bool port = false, asymmetric = false, several_regions = false;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const generated_cluster g = generate_cluster(seed, {4, 24});
    BOOST_TEST_CONTEXT("seed " << seed << ": " << g.summary) {
      BOOST_TEST(g.c.devices.size() >= 4u);
      BOOST_TEST(g.c.devices.size() <= 24u);
      for (size_t r = 0; r < g.c.regions.size(); ++r) {
        bool has_device = false;
        for (const auto& d : g.c.devices)
          has_device = has_device || d.region == int(r);
        BOOST_TEST(has_device);
      }
      BOOST_TEST(g.batch > 0);
      const model_spec m = make_model_spec(*model_preset(g.model), g.model);
      BOOST_CHECK_NO_THROW(check_model_fits(g.c, m, "generated"));
    }
    shapes.insert(g.shape);
    models.insert(g.model);
    several_regions = several_regions || g.c.regions.size() > 1;
    for (const auto& n : g.c.nodes)
      port = port || n.nic_Bps.has_value();
    for (const auto& o : g.c.overrides)
      asymmetric = asymmetric || o.directed;
  }
  BOOST_TEST(shapes.size() == 3u);
  BOOST_TEST(models.size() >= 3u);
  BOOST_TEST(port);
  BOOST_TEST(asymmetric);
  BOOST_TEST(several_regions);
}

BOOST_AUTO_TEST_SUITE_END()
