#include "runtime/io/job_snapshot_json.hpp"

#include "runtime/base/errors.hpp"

#include "tests/runtime/watch/snapshot_samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

using namespace deepcee::runtime;

namespace {

/// The error's text when `text` is refused, or "" when it is read.
std::string refusal(const std::string& text) {
  try {
    job_snapshot_from_json(text, "peer 127.0.0.1:1");
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

BOOST_AUTO_TEST_SUITE(job_snapshot_json_tests)

BOOST_AUTO_TEST_CASE(round_trip_keeps_every_field) {
  const auto s = deepcee::test::sample_snapshot();
  const auto text = job_snapshot_to_json(s);
  BOOST_TEST(text.find('\n') == std::string::npos);
  const auto r = job_snapshot_from_json(text, "test");
  BOOST_TEST(job_snapshot_to_json(r) == text);
  BOOST_TEST(r.version == 12u);
  BOOST_TEST(*r.loss == 4.25);
  BOOST_TEST(r.stages.size() == 2u);
  BOOST_TEST(r.stages[1].ops[1].kind == "W");
  BOOST_TEST(r.stages[0].bubble == 0.25);
  BOOST_TEST(r.devices[2].memory_capacity_bytes == 8e9);
  BOOST_TEST(r.links[0].name == "cloud0/0 -> edge0/0");
  BOOST_TEST(r.links[0].plan_latency_s == 0.02);
  BOOST_TEST(r.links[0].samples == 17);
  BOOST_TEST(r.links[0].drifted);
  BOOST_TEST(r.allocation.compression[0].compression == "fp16");
  BOOST_TEST(r.decisions[0].reason == "edge0/0 link 40% slower");
  BOOST_TEST(r.events[0].time_s == 1.25);
  BOOST_TEST(r.decisions_by_kind.at("rebalance") == 1);
  BOOST_TEST(r.events_total == 1);
  BOOST_TEST(r.dropped_frames == 3);
}

BOOST_AUTO_TEST_CASE(absent_values_are_null) {
  auto s = deepcee::test::sample_snapshot();
  s.loss.reset();
  s.val_loss = NAN;
  s.emulated_samples_per_s.reset();
  const auto text = job_snapshot_to_json(s);
  BOOST_TEST(text.find("\"loss\":null") != std::string::npos);
  BOOST_TEST(text.find("\"val_loss\":null") != std::string::npos);
  const auto r = job_snapshot_from_json(text, "test");
  BOOST_TEST(!r.loss);
  BOOST_TEST(!r.val_loss);
  BOOST_TEST(!r.emulated_samples_per_s);
  BOOST_TEST(*r.real_samples_per_s == 120.5);
}

BOOST_AUTO_TEST_CASE(malformed_input_is_refused_naming_the_peer_and_the_path) {
  const auto good = job_snapshot_to_json(deepcee::test::sample_snapshot());
  BOOST_TEST(refusal(good).empty());
  BOOST_TEST(refusal("").find("peer 127.0.0.1:1: snapshot: not JSON") == 0);
  BOOST_TEST(refusal(good.substr(0, good.size() / 2)).find("not JSON") != std::string::npos);
  BOOST_TEST(refusal("[1, 2]").find("expected an object") != std::string::npos);
  BOOST_TEST(refusal(replaced(good, "deepcee-snapshot", "other")).find("snapshot.format") !=
             std::string::npos);
  BOOST_TEST(refusal(replaced(good, "\"step\":12", "\"step\":\"12\"")).find("snapshot.step") !=
             std::string::npos);
  BOOST_TEST(refusal(replaced(good, "\"kind\":\"W\"", "\"kind\":\"X\""))
                 .find("snapshot.stages[1].ops[1].kind") != std::string::npos);
  BOOST_TEST(refusal(replaced(good, "\"micro\":0", "\"micro\":-1")).find("out of range") !=
             std::string::npos);
  BOOST_TEST(refusal(replaced(good, "\"step\":12", "\"step\":1e400")).find("not JSON") !=
             std::string::npos);
  BOOST_TEST(refusal(replaced(good, ",\"dropped_frames\":3", "")).find("missing") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(reading_is_bounded) {
  const auto good = job_snapshot_to_json(deepcee::test::sample_snapshot());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  BOOST_TEST(refusal(deep).find("nested deeper") != std::string::npos);
  const std::string long_name(max_snapshot_string + 1, 'x');
  BOOST_TEST(
      refusal(replaced(good, "\"edge-demo\"", "\"" + long_name + "\"")).find("longer than") !=
      std::string::npos);
  std::string many = "[";
  for (size_t i = 0; i <= max_snapshot_items; ++i)
    many += (i ? ",1" : "1");
  many += "]";
  BOOST_TEST(
      refusal(replaced(good, "\"loss_history\":[5.5,5.0,4.75,4.25]", "\"loss_history\":" + many))
          .find("more than") != std::string::npos);
  BOOST_TEST(refusal(std::string(max_snapshot_bytes + 1, ' ')).find("larger than") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
