#include "runtime/watch/inspect_view.hpp"

#include "tests/runtime/watch/snapshot_samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace deepcee::runtime;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines)
    out += l + "\n";
  return out;
}

bool shows(const std::vector<std::string>& lines, const std::string& text) {
  return joined(lines).find(text) != std::string::npos;
}

std::vector<std::string> page(inspect_page p, int width = 160, int height = 0) {
  return render_page(deepcee::test::sample_snapshot(), p, {width, height, "http://h:1", ""});
}

} // namespace

BOOST_AUTO_TEST_SUITE(inspect_view_tests)

BOOST_AUTO_TEST_CASE(sparkline_scales_the_recent_values_to_eight_levels) {
  BOOST_TEST(sparkline({1, 2, 3}, 5) == "  .=#");
  BOOST_TEST(sparkline({1, 2, 3, 4, 5, 6, 7}, 3) == ".=#"); // the newest three
  BOOST_TEST(sparkline({2, NAN, 2}, 3) == "= =");           // flat: the middle level
  BOOST_TEST(sparkline({}, 4) == "    ");
}

BOOST_AUTO_TEST_CASE(op_timeline_shows_which_op_covers_each_cell) {
  const std::vector<timeline_op> ops{{"F", 0, 0.0, 1.0}, {"B", 0, 1.0, 2.0}, {"W", 0, 3.5, 4.0}};
  BOOST_TEST(op_timeline(ops, 0.0, 4.0, 8) == "FFBB...W");
  BOOST_TEST(op_timeline(ops, 0.0, 4.0, 4) == "FB.W");
  BOOST_TEST(op_timeline(ops, 1.0, 1.0, 3) == "..."); // an empty window
}

BOOST_AUTO_TEST_CASE(overview_shows_step_loss_rates_and_a_line_per_stage) {
  const auto lines = page(inspect_page::overview);
  BOOST_TEST(lines[0].find("http://h:1") != std::string::npos);
  BOOST_TEST(shows(lines, "[1 overview]"));
  BOOST_TEST(shows(lines, "step 12/40  loss 4.2500  validation 4.5000 at step 10"));
  BOOST_TEST(shows(lines, "samples/s: real 120.5, emulated 64.0"));
  BOOST_TEST(shows(lines, "stage p0 s0 [cloud0/0 cloud0/1]"));
  BOOST_TEST(shows(lines, "stage p0 s1 [edge0/0]"));
  BOOST_TEST(shows(lines, "bubble  25.0%"));
  BOOST_TEST(shows(lines, "dropped: 2 message(s), 3 frame(s)"));
  BOOST_TEST(shows(lines, "network group 1: edge0"));
  BOOST_TEST(!shows(lines, "op timeline of step"));
}

BOOST_AUTO_TEST_CASE(each_page_shows_its_part) {
  const auto stages = page(inspect_page::stages);
  BOOST_TEST(shows(stages, "[2 stages]"));
  BOOST_TEST(shows(stages, "op timeline of step 12"));
  BOOST_TEST(shows(stages, "layers 3-4"));
  BOOST_TEST(shows(stages, "F0 0.00-100.00, B0 200.00-400.00"));
  const auto devices = page(inspect_page::devices);
  BOOST_TEST(shows(devices, "edge0/0"));
  BOOST_TEST(shows(devices, " 50.0%"));
  BOOST_TEST(shows(devices, "7.5 GiB"));
  const auto links = page(inspect_page::links);
  BOOST_TEST(shows(links, "cloud0/0 -> edge0/0"));
  BOOST_TEST(shows(links, "21.000 ms"));
  BOOST_TEST(shows(links, "20.000 ms"));
  BOOST_TEST(shows(links, "2.9 MiB"));
  const auto adapter = page(inspect_page::adapter);
  BOOST_TEST(shows(adapter, "micro-batches: pipeline 0: 4"));
  BOOST_TEST(shows(adapter, "cloud0/1 1"));
  BOOST_TEST(shows(adapter, "fp16"));
  BOOST_TEST(shows(adapter, "rebalance"));
  BOOST_TEST(shows(adapter, "+12.5%"));
  BOOST_TEST(shows(adapter, "link cloud -> edge: 1 Mbps"));
}

BOOST_AUTO_TEST_CASE(lines_fit_the_terminal) {
  const auto lines = page(inspect_page::overview, 40, 8);
  BOOST_TEST(lines.size() == 8u);
  for (const auto& l : lines)
    BOOST_TEST(l.size() <= 40u);
  BOOST_TEST(lines.back().find("... ") == 0u);
  BOOST_TEST(lines.back().find("more line(s)") != std::string::npos);
  BOOST_TEST(page(inspect_page::overview, 160, 100).size() < 100u); // no filler
}

BOOST_AUTO_TEST_CASE(empty_lists_and_dry_runs_say_so) {
  auto s = deepcee::test::sample_snapshot();
  s.decisions.clear();
  s.events.clear();
  s.links.clear();
  s.loss.reset();
  s.time_mode = "dry";
  const auto all = render_all(s, {0, 0, "h:1", ""});
  BOOST_TEST(shows(all, "loss not computed (dry)"));
  BOOST_TEST(shows(all, "(no stage boundary: the all-reduce's links are not measured yet)"));
  BOOST_TEST(shows(all, "adapter decisions:\n  (none)"));
  BOOST_TEST(shows(all, "injected events and faults:\n  (none)"));
  BOOST_TEST(shows(all, "== links"));
  BOOST_TEST(summary_line(s).find("step 12/40 loss -") == 0u);
}

BOOST_AUTO_TEST_CASE(tab_cycles_through_every_page) {
  auto p = inspect_page::overview;
  for (int k = 0; k < inspect_page_count; ++k)
    p = next_page(p);
  BOOST_TEST((p == inspect_page::overview));
  BOOST_TEST(page_name(next_page(inspect_page::links)) == "adapter & events");
}

BOOST_AUTO_TEST_SUITE_END()
