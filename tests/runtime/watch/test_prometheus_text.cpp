#include "runtime/watch/prometheus_text.hpp"

#include "tests/runtime/watch/snapshot_samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text))
    if (l == line)
      return true;
  return false;
}

/// The name of a sample line: up to its labels or its value.
std::string sample_name(const std::string& line) {
  return line.substr(0, line.find_first_of("{ "));
}

} // namespace

BOOST_AUTO_TEST_SUITE(prometheus_text_tests)

BOOST_AUTO_TEST_CASE(every_value_of_the_snapshot_is_a_sample) {
  const auto text = job_snapshot_to_prometheus(deepcee::test::sample_snapshot());
  for (const char* line : {
           "deepcee_step 12",
           "deepcee_steps 40",
           "deepcee_loss 4.25",
           "deepcee_validation_loss 4.5",
           "deepcee_validation_step 10",
           "deepcee_clock_seconds 1.5",
           "deepcee_samples_per_second{clock=\"real\"} 120.5",
           "deepcee_samples_per_second{clock=\"emulated\"} 64",
           "deepcee_stage_bubble_ratio{pipeline=\"0\",stage=\"1\"} 0.5",
           "deepcee_device_utilization_ratio{device=\"cloud0/1\",kind=\"a100\"} 0.7",
           "deepcee_device_memory_used_bytes{device=\"edge0/0\",kind=\"jetson\"} 1000000000",
           "deepcee_device_memory_capacity_bytes{device=\"cloud0/0\",kind=\"a100\"} 40000000000",
           "deepcee_link_bandwidth_bytes_per_second{from=\"cloud0/0\",to=\"edge0/0\"} 1200000",
           "deepcee_link_latency_seconds{from=\"cloud0/0\",to=\"edge0/0\"} 0.021",
           "deepcee_link_plan_bandwidth_bytes_per_second{from=\"cloud0/0\",to=\"edge0/0\"} 1250000",
           "deepcee_link_plan_latency_seconds{from=\"cloud0/0\",to=\"edge0/0\"} 0.02",
           "deepcee_link_sent_bytes_total{from=\"cloud0/0\",to=\"edge0/0\"} 3000000",
           "deepcee_link_transfers_total{from=\"cloud0/0\",to=\"edge0/0\"} 24",
           "deepcee_link_drifted{from=\"cloud0/0\",to=\"edge0/0\"} 1",
           "deepcee_dropped_messages_total 2",
           "deepcee_dropped_frames_total 3",
           "deepcee_adapter_decisions_total{kind=\"rebalance\"} 1",
           "deepcee_injected_events_total 1",
           "# TYPE deepcee_link_sent_bytes_total counter",
           "# TYPE deepcee_loss gauge",
       })
    BOOST_TEST(has_line(text, line), "missing: " << line);
}

BOOST_AUTO_TEST_CASE(every_sample_follows_its_own_help_and_type_lines) {
  const auto text = job_snapshot_to_prometheus(deepcee::test::sample_snapshot());
  BOOST_TEST(text.back() == '\n');
  std::set<std::string> families;
  std::string help, type;
  for (const auto& line : lines_of(text)) {
    BOOST_REQUIRE(!line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      help = line.substr(7, line.find(' ', 7) - 7);
      BOOST_TEST(families.insert(help).second, "family twice: " << help);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      type = line.substr(7, line.find(' ', 7) - 7);
      BOOST_TEST(type == help);
      const auto kind = line.substr(line.rfind(' ') + 1);
      BOOST_TEST((kind == "gauge" || kind == "counter"), line);
      BOOST_TEST((kind == "counter") == (type.size() > 6 && type.ends_with("_total")), line);
      continue;
    }
    BOOST_TEST(sample_name(line) == type, line);
    BOOST_TEST(line.rfind("deepcee_", 0) == 0u, line);
  }
  BOOST_TEST(families.size() == 24u);
}

BOOST_AUTO_TEST_CASE(absent_values_leave_their_family_without_a_sample) {
  auto s = deepcee::test::sample_snapshot();
  s.loss.reset();
  s.val_loss.reset();
  s.emulated_samples_per_s.reset();
  s.decisions.clear();
  s.events.clear();
  s.decisions_by_kind.clear();
  s.events_total = 0;
  const auto text = job_snapshot_to_prometheus(s);
  BOOST_TEST(has_line(text, "# TYPE deepcee_loss gauge"));
  for (const auto& line : lines_of(text)) {
    BOOST_TEST(sample_name(line) != "deepcee_loss", line);
    BOOST_TEST(sample_name(line) != "deepcee_validation_loss", line);
    BOOST_TEST(sample_name(line) != "deepcee_validation_step", line);
    BOOST_TEST(sample_name(line) != "deepcee_adapter_decisions_total", line);
    BOOST_TEST(line.find("clock=\"emulated\"") == std::string::npos, line);
  }
  BOOST_TEST(has_line(text, "deepcee_samples_per_second{clock=\"real\"} 120.5"));
  BOOST_TEST(has_line(text, "deepcee_injected_events_total 0"));
}

BOOST_AUTO_TEST_CASE(decisions_are_counted_by_kind) {
  // The totals, not the recent lists, which keep only the latest entries.
  auto s = deepcee::test::sample_snapshot();
  s.decisions = {{7, "resplit", "c", 0.3}};
  s.decisions_by_kind = {{"resplit", 2}, {"rebalance", 1}};
  s.events_total = 2;
  const auto text = job_snapshot_to_prometheus(s);
  BOOST_TEST(has_line(text, "deepcee_adapter_decisions_total{kind=\"rebalance\"} 1"));
  BOOST_TEST(has_line(text, "deepcee_adapter_decisions_total{kind=\"resplit\"} 2"));
  BOOST_TEST(has_line(text, "deepcee_injected_events_total 2"));
}

BOOST_AUTO_TEST_CASE(label_values_are_escaped) {
  BOOST_TEST(prometheus_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  auto s = deepcee::test::sample_snapshot();
  s.job = "say \"hi\"\nC:\\jobs";
  s.links = {{"odd\"dev -> x\\y", 1, 2, 3, 4, 7, true, 5, 6}};
  const auto text = job_snapshot_to_prometheus(s);
  BOOST_TEST(text.find("job=\"say \\\"hi\\\"\\nC:\\\\jobs\"") != std::string::npos);
  BOOST_TEST(has_line(text, "deepcee_link_transfers_total{from=\"odd\\\"dev\",to=\"x\\\\y\"} 6"));
  for (const auto& line : lines_of(text))
    BOOST_TEST(line.find("\"hi\"\n") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(numbers_read_back_as_the_same_double) {
  for (const double v : {0.1, 1.0 / 3.0, 4.123456789012345e-7, 1e300, -2.5, 0.0})
    BOOST_TEST(std::stod(prometheus_number(v)) == v);
  BOOST_TEST(prometheus_number(12) == "12");
  BOOST_TEST(prometheus_number(4e10) == "40000000000");
  BOOST_TEST(prometheus_number(-0.0) == "0");
  BOOST_TEST(prometheus_number(2.5e20) == "2.5e+20");
  BOOST_TEST(prometheus_number(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  BOOST_TEST(prometheus_number(std::numeric_limits<double>::infinity()) == "+Inf");
  BOOST_TEST(prometheus_number(-std::numeric_limits<double>::infinity()) == "-Inf");
}

BOOST_AUTO_TEST_SUITE_END()
