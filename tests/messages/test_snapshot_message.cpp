// A stage's checkpoint snapshot between nodes: every rule of its decoder refuses what breaks
// it, naming the field, and a tensor Cap'n Proto cannot hold is refused by the sender.
#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <stdexcept>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

namespace {

void check_refused(const stage_snapshot& s, const std::string& mentions) {
  const auto r = decode_stage_snapshot(encode(s));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().what.find(mentions) != std::string::npos,
             "'" << r.error().what << "' should mention '" << mentions << "'");
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshot_message)

BOOST_AUTO_TEST_CASE(float_values_cross_bit_for_bit) {
  auto s = sample_stage_snapshot();
  s.params[1].value = random_values(6, 3, 1e-30f); // denormals among them
  s.params[1].exp_avg = {-0.0f, 1e38f, -1e-38f, 7.0f, 0.5f, 2.0f};
  s.params[1].exp_avg_sq = random_values(6, 4);
  const auto back = decode_stage_snapshot(encode(s));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back == s));
  BOOST_TEST(std::signbit(back->params[1].exp_avg[0])); // -0 stays -0
}

BOOST_AUTO_TEST_CASE(a_stage_without_parameters_round_trips) {
  const stage_snapshot empty{0, 0, 0, {}, ""};
  const auto back = decode_stage_snapshot(encode(empty));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back == empty));
}

BOOST_AUTO_TEST_CASE(each_broken_rule_is_refused_naming_the_field) {
  const std::vector<std::pair<std::string, std::function<void(stage_snapshot&)>>> cases{
      {"step is negative", [](auto& s) { s.step = -1; }},
      {"pipeline is negative", [](auto& s) { s.pipeline = -2; }},
      {"stage is negative", [](auto& s) { s.stage = -1; }},
      {"params[0].name is empty", [](auto& s) { s.params[0].name.clear(); }},
      {"params[1].shape is empty", [](auto& s) { s.params[1].shape.clear(); }},
      {"params[1].shape has a dimension",
       [](auto& s) {
         s.params[1].shape = {2, 0};
       }},
      {"params[1].shape has a dimension",
       [](auto& s) {
         s.params[1].shape = {-2, -3};
       }},
      {"params[1].shape has a dimension", // a product that overflows
       [](auto& s) {
         s.params[1].shape = {int64_t{1} << 40, int64_t{1} << 40};
       }},
      {"params[1].value holds 6 values, not the shape's 8",
       [](auto& s) {
         s.params[1].shape = {2, 4};
       }},
      {"params[0].value holds 3 values", [](auto& s) { s.params[0].value.pop_back(); }},
      {"params[0].exp_avg and exp_avg_sq", [](auto& s) { s.params[0].exp_avg.pop_back(); }},
      {"params[0].exp_avg and exp_avg_sq", [](auto& s) { s.params[0].exp_avg_sq.clear(); }},
      {"params[1].exp_avg and exp_avg_sq",
       [](auto& s) { s.params[1].exp_avg = {1, 2, 3, 4, 5, 6}; }},
  };
  for (const auto& [mentions, breaks] : cases) {
    BOOST_TEST_CONTEXT(mentions) {
      auto s = sample_stage_snapshot();
      breaks(s);
      check_refused(s, "stage_snapshot: " + mentions);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_tensor_above_one_message_field_is_refused_by_the_sender) {
  auto s = sample_stage_snapshot();
  s.params[1].shape = {(max_payload_bytes + 1) / 4}; // one byte above the limit, in floats
  s.params[1].value.resize(static_cast<size_t>(s.params[1].shape[0]));
  try {
    (void)encode(s);
    BOOST_FAIL("encoded a tensor larger than a Data field");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("'transformer.h.3.attn.c_attn.weight' value has 536870912 bytes") !=
                   std::string::npos,
               what);
  }
}

BOOST_AUTO_TEST_SUITE_END()
