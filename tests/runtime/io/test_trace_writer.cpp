// The one trace writer: processes, tracks and spans (with their args) as Chrome / Perfetto
// trace JSON in microseconds.
#include "runtime/io/trace_writer.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(trace_writer_suite)

BOOST_AUTO_TEST_CASE(writes_processes_tracks_and_spans_with_args) {
  trace_document doc;
  doc.processes = {"stages", "links"};
  doc.tracks = {{0, 0, "pipeline 0 stage 0"}, {1, 7, "link cloud0/1 -> edge0/0"}};
  doc.spans = {{"F3", 0, 0, 0.5, 0.75, {{"step", 2}}},
               {"send act m3", 1, 7, 0.75, 1.0, {{"step", 2}, {"bytes", 4096}}},
               {"optimizer", 0, 0, 1.0, 1.5, {}}};
  std::ostringstream out;
  write_trace(doc, out);
  const auto j = nlohmann::json::parse(out.str());
  BOOST_TEST(j["displayTimeUnit"] == "ms");
  const auto& e = j["traceEvents"];
  BOOST_TEST_REQUIRE(e.size() == 7u);
  BOOST_TEST(e[0]["name"] == "process_name");
  BOOST_TEST(e[0]["pid"] == 0);
  BOOST_TEST(e[0]["args"]["name"] == "stages");
  BOOST_TEST(e[1]["args"]["name"] == "links");
  BOOST_TEST(e[1]["pid"] == 1);
  BOOST_TEST(e[3]["name"] == "thread_name");
  BOOST_TEST(e[3]["pid"] == 1);
  BOOST_TEST(e[3]["tid"] == 7);
  BOOST_TEST(e[3]["args"]["name"] == "link cloud0/1 -> edge0/0");
  BOOST_TEST(e[4]["ph"] == "X");
  BOOST_TEST(e[4]["name"] == "F3");
  BOOST_TEST(e[4]["ts"].get<double>() == 5e5);
  BOOST_TEST(e[4]["dur"].get<double>() == 2.5e5);
  BOOST_TEST(e[4]["args"]["step"].get<double>() == 2);
  BOOST_TEST(e[5]["pid"] == 1);
  BOOST_TEST(e[5]["tid"] == 7);
  BOOST_TEST(e[5]["args"]["bytes"].get<double>() == 4096);
  BOOST_TEST(!e[6].contains("args"));
}

BOOST_AUTO_TEST_SUITE_END()
