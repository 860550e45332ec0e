#include "runtime/io/metrics_writer.hpp"

#include "runtime/base/errors.hpp"

#include <boost/test/unit_test.hpp>

#include "tests/support/temp_dir.hpp"
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace deepcee::runtime;

namespace {

using deepcee::test::slurp;
using deepcee::test::temp_dir;

} // namespace

BOOST_AUTO_TEST_SUITE(metrics_writer_tests)

BOOST_AUTO_TEST_CASE(csv_writes_the_header_once_and_flushes_each_row) {
  temp_dir dir;
  const fs::path file = dir.path / "metrics.csv";
  metrics_writer writer(file, metrics_format::csv);
  writer.write({{"step", int64_t{1}}, {"loss", 2.5}, {"note", std::string("a,\"b\"")}});
  // Flushed: readable while the writer is still open.
  BOOST_TEST(slurp(file) == "step,loss,note\n1,2.5,\"a,\"\"b\"\"\"\n");
  writer.write({{"step", int64_t{2}}, {"loss", 0.1}});
  writer.write({{"loss", std::numeric_limits<double>::quiet_NaN()}, {"step", int64_t{3}}});
  BOOST_TEST(slurp(file) == "step,loss,note\n1,2.5,\"a,\"\"b\"\"\"\n2,0.1,\n3,nan,\n");
  BOOST_CHECK_THROW(writer.write({{"new_column", 1.0}}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(csv_append_keeps_the_existing_header) {
  temp_dir dir;
  const fs::path file = dir.path / "metrics.csv";
  {
    metrics_writer writer(file, metrics_format::csv);
    writer.write({{"step", int64_t{1}}, {"loss", 1.0}});
  }
  metrics_writer resumed(file, metrics_format::csv, true);
  resumed.write({{"step", int64_t{2}}, {"loss", 0.75}});
  BOOST_TEST(slurp(file) == "step,loss\n1,1\n2,0.75\n");
}

BOOST_AUTO_TEST_CASE(jsonl_writes_one_object_per_row) {
  temp_dir dir;
  const fs::path file = dir.path / "metrics.jsonl";
  metrics_writer writer(file, metrics_format::jsonl);
  writer.write({{"step", int64_t{1}}, {"loss", 2.5}, {"phase", std::string("train")}});
  writer.write({{"step", int64_t{2}}, {"val_loss", std::numeric_limits<double>::infinity()}});
  BOOST_TEST(slurp(file) == "{\"step\":1,\"loss\":2.5,\"phase\":\"train\"}\n"
                            "{\"step\":2,\"val_loss\":null}\n");
}

BOOST_AUTO_TEST_CASE(doubles_round_trip) {
  temp_dir dir;
  const fs::path file = dir.path / "m.csv";
  metrics_writer writer(file, metrics_format::csv);
  const double x = 0.1 + 0.2;
  writer.write({{"x", x}});
  const std::string text = slurp(file);
  BOOST_TEST(std::stod(text.substr(2)) == x);
}

BOOST_AUTO_TEST_CASE(unwritable_file_is_an_input_error) {
  temp_dir dir;
  const fs::path file = dir.path / "missing-dir" / "metrics.csv";
  BOOST_CHECK_EXCEPTION(metrics_writer(file, metrics_format::csv), input_error,
                        [&](const input_error& e) {
                          return std::string(e.what()).find(file.string()) != std::string::npos;
                        });
  BOOST_TEST((parse_metrics_format("jsonl") == metrics_format::jsonl));
  BOOST_CHECK_THROW(parse_metrics_format("xml"), input_error);
}

BOOST_AUTO_TEST_SUITE_END()
