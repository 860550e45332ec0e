// Bad input of each kind below: each is refused with one input_error that names the file (and a
// line of it), never a crash, a hang or a wrong line. The fuzz cases mutate the real files
// of configs/ with a fixed seed and a time bound.
#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/train_config_toml.hpp"
#include "runtime/planner/plan_builder.hpp"

#include <boost/test/unit_test.hpp>

#include "tests/support/clusters.hpp"
#include "tests/support/temp_dir.hpp"
#include <sys/stat.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace deepcee::runtime;
using deepcee::test::configs_dir;
using deepcee::test::slurp;
using deepcee::test::temp_dir;

namespace {

void write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines)
    out += l + "\n";
  return out;
}

/// One random edit of a config, as a careless user makes them.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  static const char* values[] = {"0",     "-1",  "-5",   "2147483647", "9223372036854775807",
                                 "1e308", "nan", "inf",  "\"\"",       "\"cuda\"",
                                 "[]",    "{}",  "true", "1000000",    "100000"};
  auto lines = lines_of(text);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % std::max<size_t>(n, 1)); };
  switch (rng() % 7) {
  case 0: // drop a line
    if (!lines.empty())
      lines.erase(lines.begin() + static_cast<long>(pick(lines.size())));
    break;
  case 1: // duplicate a line
    if (!lines.empty()) {
      const size_t i = pick(lines.size());
      lines.insert(lines.begin() + static_cast<long>(i), lines[i]);
    }
    break;
  case 2: // swap two lines
    if (!lines.empty())
      std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
    break;
  case 3:
  case 4: { // another value
    std::vector<size_t> assignments;
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find('=') != std::string::npos && lines[i][0] != '#')
        assignments.push_back(i);
    if (!assignments.empty()) {
      auto& l = lines[assignments[pick(assignments.size())]];
      l = l.substr(0, l.find('=') + 1) + " " + values[pick(std::size(values))];
    }
    break;
  }
  case 5: { // a misspelt key
    if (!lines.empty()) {
      auto& l = lines[pick(lines.size())];
      if (auto eq = l.find(" ="); eq != std::string::npos)
        l.insert(eq, "x");
    }
    break;
  }
  default: { // cut short
    const std::string all = joined(lines);
    return all.substr(0, pick(all.size() + 1));
  }
  }
  return joined(lines);
}

/// The refusal names `file` (or `other`, a file it refers to), and any line it gives
/// exists in that file.
void check_refusal(const std::string& message, const fs::path& file, const std::string& text,
                   const fs::path& other = {}, const std::string& other_text = {}) {
  BOOST_TEST_CONTEXT("input:\n" << text << "\nrefusal: " << message) {
    const bool names_file = message.rfind(file.string() + ":", 0) == 0;
    const bool names_other = !other.empty() && message.rfind(other.string() + ":", 0) == 0;
    BOOST_TEST((names_file || names_other));
    BOOST_TEST(message.find('\n') == std::string::npos);
    const auto& where = names_file ? file : other;
    const auto& content = names_file ? text : other_text;
    std::smatch m;
    const std::string rest = message.substr(where.string().size());
    if (std::regex_search(rest, m, std::regex("^:([0-9]+):"))) {
      const long line = std::stol(m[1]);
      const long count = static_cast<long>(lines_of(content).size());
      BOOST_TEST(line >= 1);
      BOOST_TEST(line <= std::max(count, 1L));
    }
  }
}

/// Mutates `original` for at most `budget` or `rounds` rounds, loading each through `load`.
void fuzz(const std::string& original, const fs::path& file, uint64_t seed,
          const std::function<void()>& load, const fs::path& other = {},
          const std::string& other_text = {}) {
  std::mt19937_64 rng(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int refused = 0, rounds = 0;
  for (; rounds < 400 && std::chrono::steady_clock::now() < deadline; ++rounds) {
    std::string text = original;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits)
      text = mutate(text, rng);
    write(file, text);
    try {
      load();
    } catch (const input_error& e) {
      ++refused;
      check_refusal(e.what(), file, text, other, other_text);
    } catch (const std::exception& e) {
      BOOST_FAIL("not an input_error: " << e.what() << "\ninput:\n" << text);
    }
  }
  BOOST_TEST_MESSAGE(file.filename() << ": " << rounds << " mutations, " << refused << " refused");
  BOOST_TEST(refused > 0);
  BOOST_TEST(rounds >= 20);
}

} // namespace

BOOST_AUTO_TEST_SUITE(bad_input_tests)

BOOST_AUTO_TEST_CASE(train_keys_of_a_job_file_are_reported_at_their_own_line) {
  temp_dir dir;
  const fs::path src = configs_dir() / "local-cluster";
  fs::copy_file(src / "cluster.toml", dir.path / "cluster.toml");
  auto lines = lines_of(slurp(src / "job.toml"));
  size_t batch_line = 0, layer_line = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("batch =", 0) == 0)
      batch_line = i + 1, lines[i] = "batch = 0";
    if (lines[i].rfind("n_layer =", 0) == 0)
      layer_line = i + 1;
  }
  BOOST_REQUIRE(batch_line > 1);
  const fs::path job = dir.path / "job.toml";
  write(job, joined(lines));
  BOOST_TEST(error_of([&] { load_job_config(job); }) ==
             job.string() + ":" + std::to_string(batch_line) + ": 'batch' must be >= 1, got 0");
  // Lines are kept for checks made after loading (memory, cores, GPUs).
  lines[batch_line - 1] = "batch = 12";
  write(job, joined(lines));
  const job_config loaded = load_job_config(job);
  BOOST_TEST(loaded.train.origin.file == job);
  BOOST_TEST(loaded.train.origin.line("batch") == static_cast<int64_t>(batch_line));
  BOOST_TEST(loaded.train.origin.line("model.n_layer") == static_cast<int64_t>(layer_line));
  BOOST_TEST(loaded.train.origin.line("optimizer.lr") == 0);
}

BOOST_AUTO_TEST_CASE(batches_and_evaluations_are_bounded) {
  temp_dir dir;
  const fs::path file = dir.path / "t.toml";
  write(file, "steps = 1\nbatch = 2147483647\n");
  BOOST_TEST(error_of([&] { load_train_config(file); }) ==
             file.string() + ":2: 'batch' must be <= " + std::to_string(max_batch) +
                 ", got 2147483647");
  write(file, "eval_batches = 2000000000\n");
  BOOST_TEST(error_of([&] {
               load_train_config(file);
             }).rfind(file.string() + ":1: 'eval_batches' must be <=", 0) == 0);
  write(file, "batch = " + std::to_string(max_batch) + "\n");
  BOOST_TEST(load_train_config(file).batch == max_batch);
}

BOOST_AUTO_TEST_CASE(divisors_between_does_not_overflow_at_int_max) {
  BOOST_TEST(divisors_between(INT_MAX, 1, INT_MAX) == (std::vector<int>{1, INT_MAX}));
  BOOST_TEST(divisors_between(INT_MAX - 1, 3, 7) == (std::vector<int>{3, 6, 7}));
  // Against the definition, for every small n and range.
  for (int n = 0; n <= 120; ++n)
    for (int lo = -1; lo <= 13; lo += 2)
      for (int hi : {0, 1, 5, 60, 200}) {
        std::vector<int> want;
        for (int d = std::max(1, lo); d <= std::min(n, hi); ++d)
          if (n % d == 0)
            want.push_back(d);
        BOOST_TEST(divisors_between(n, lo, hi) == want, "n " << n << " lo " << lo << " hi " << hi);
      }
}

BOOST_AUTO_TEST_CASE(what_is_not_a_regular_file_is_refused_not_read) {
  temp_dir dir;
  const fs::path fifo = dir.path / "fifo";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  BOOST_TEST(error_of([&] { text_corpus::load(fifo, 0.1); }) ==
             fifo.string() + ": corpus file is a FIFO, not a regular file, so it cannot be read");
  BOOST_TEST(error_of([&] {
               load_cluster(fifo);
             }).rfind(fifo.string() + ": cluster file is a FIFO", 0) == 0);
  BOOST_TEST(error_of([&] {
               load_train_config(fifo);
             }).rfind(fifo.string() + ": config file is a FIFO", 0) == 0);
  BOOST_TEST(
      error_of([&] { text_corpus::load("/dev/zero", 0.1); }) ==
      "/dev/zero: corpus file is a character device, not a regular file, so it cannot be read");
  const fs::path big = dir.path / "big.txt";
  write(big, std::string(100, 'x'));
  BOOST_TEST(read_bounded_file(big, 100, "file").size() == 100u);
  BOOST_TEST(error_of([&] { read_bounded_file(big, 99, "file"); }) ==
             big.string() + ": file has 100 bytes, more than the 99 bytes this reader accepts");
}

BOOST_AUTO_TEST_CASE(a_cluster_of_too_many_devices_is_refused_at_its_line) {
  const std::string text =
      "name = \"x\"\n[[region]]\nname = \"r\"\ntier = \"cloud\"\n[[node]]\nname = \"n\"\n"
      "region = \"r\"\nreplicas = 100000\n"
      "devices = [{ kind = \"T4\", count = 1 }]\n";
  const std::string e = error_of([&] { parse_cluster(text, "c.toml"); });
  BOOST_TEST(e.rfind("c.toml:8: node 'n' brings the cluster to more than 16384 devices", 0) == 0);
  BOOST_TEST(parse_cluster(std::regex_replace(text, std::regex("100000"), "16384"), "c.toml")
                 .devices.size() == 16384u);
}

BOOST_AUTO_TEST_CASE(sizes_beyond_the_host_are_refused_at_the_key_to_change) {
  const host_resources host{2, 8.0 * (1u << 30)};
  train_config c;
  c.origin.file = "t.toml";
  c.origin.lines = {{"batch", 3}, {"model.n_layer", 9}, {"threads", 4}};
  BOOST_CHECK_NO_THROW(require_fits_host(c, host, batch_use::whole));
  // The need grows with the layers and the batch; one block costs what the spec says.
  train_config deeper = c;
  deeper.model.n_layer *= 2;
  BOOST_TEST(training_bytes(deeper.model, 32) > training_bytes(c.model, 32));
  BOOST_TEST(training_bytes(c.model, 64) > training_bytes(c.model, 32));
  BOOST_TEST(evaluation_bytes(c.model, 32) < training_bytes(c.model, 32));
  c.model.n_layer = 1000000;
  std::string e = error_of([&] { require_fits_host(c, host, batch_use::whole); });
  BOOST_TEST(e.rfind("t.toml:9: training a model of 1000000 layers", 0) == 0);
  BOOST_TEST(e.find("but this machine has 8.0 GiB available") != std::string::npos);
  c.model.n_layer = 4;
  c.batch = 1 << 20;
  BOOST_TEST(
      error_of([&] { require_fits_host(c, host, batch_use::whole); }).rfind("t.toml:3: ", 0) == 0);
  // A job spreads its batch: only its token ids count beside one sample.
  BOOST_CHECK_NO_THROW(require_fits_host(c, host, batch_use::spread));
  c.batch = 32;
  c.threads = 3;
  BOOST_TEST(error_of([&] { require_fits_host(c, host, batch_use::whole); }) ==
             "t.toml:4: 'threads' = 3 is more than the 2 cores of this machine");
  // Figures whose int64 products would overflow stay beyond any host, not wrapped.
  model_config wide{4, 1 << 30, 1, 1 << 30, 256};
  BOOST_TEST(training_bytes(wide, INT_MAX) > 1e16);
}

BOOST_AUTO_TEST_CASE(fuzzed_train_configs_are_accepted_or_refused_at_a_real_line) {
  temp_dir dir;
  const fs::path file = dir.path / "single.toml";
  fuzz(slurp(configs_dir() / "single.toml"), file, 13, [&] { load_train_config(file); });
}

BOOST_AUTO_TEST_CASE(fuzzed_job_files_are_accepted_or_refused_at_a_real_line) {
  temp_dir dir;
  const fs::path src = configs_dir() / "local-cluster";
  const std::string cluster = slurp(src / "cluster.toml");
  write(dir.path / "cluster.toml", cluster);
  const fs::path file = dir.path / "job.toml";
  fuzz(
      slurp(src / "job.toml"), file, 1313, [&] { load_job_config(file); },
      dir.path / "cluster.toml", cluster);
}

BOOST_AUTO_TEST_CASE(fuzzed_cluster_files_are_accepted_or_refused_at_a_real_line) {
  temp_dir dir;
  uint64_t seed = 131313;
  for (const char* name : {"cee-small", "cee-mixed", "deepcee-testbed"}) {
    const fs::path file = dir.path / (std::string(name) + ".toml");
    fuzz(slurp(deepcee::test::cluster_file(name)), file, seed++, [&] { load_cluster(file); });
  }
}

BOOST_AUTO_TEST_SUITE_END()
