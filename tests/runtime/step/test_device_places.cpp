// Where a stage's devices run: the order they are asked in and the host boot of each.
#include "runtime/step/device_places.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

/// Stage 0 on node 0 with devices on nodes 0, 2 and 0; stage 1 on node 1 with one device
/// on node 1.
node_layout two_stages() {
  node_layout l;
  l.stage_node = {0, 1};
  l.first_slot = {0, 3};
  l.slot_node = {0, 2, 0, 1};
  l.slot_stage = {0, 0, 0, 1};
  return l;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_places)

BOOST_AUTO_TEST_CASE(devices_apart_are_asked_first_each_kind_in_order) {
  const std::vector<bool> apart{false, true, false, true};
  // Positions in `asked`, not places: places 3 and 1 sit at positions 0 and 2.
  BOOST_TEST(apart_first(apart, {3, 0, 1, 2}) == std::vector<size_t>({0, 2, 1, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(apart_first(apart, {0, 2}) == std::vector<size_t>({0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(apart_first(apart, {}).empty());
  BOOST_CHECK_THROW(apart_first(apart, {4}), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(each_place_has_the_boot_of_the_node_it_runs_on) {
  const auto layout = two_stages();
  const std::vector<std::string> boots{"boot-a", "boot-b"}; // node 2's is unknown
  BOOST_TEST(boot_of_node(boots, 1) == "boot-b");
  BOOST_TEST(boot_of_node(boots, 2) == "");
  BOOST_TEST(boot_of_node(boots, -1) == "");
  BOOST_TEST(boot_of_stage(layout, 0, boots) == "boot-a");
  BOOST_TEST(boot_of_stage(layout, 1, boots) == "boot-b");
  BOOST_TEST(boot_of_stage(layout, 2, boots) == ""); // a stage the layout does not place
  BOOST_TEST(boot_of_stage(node_layout{}, 0, boots) == "");
  BOOST_TEST(device_boots(layout, 0, 3, boots) ==
                 std::vector<std::string>({"boot-a", "", "boot-a"}),
             boost::test_tools::per_element());
  BOOST_TEST(device_boots(layout, 1, 1, {}) == std::vector<std::string>({""}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(device_boots(layout, 2, 1, boots), std::out_of_range);
}

BOOST_AUTO_TEST_SUITE_END()
