#include "runtime/data/text_corpus.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/data/byte_tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include "tests/support/temp_dir.hpp"
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace deepcee::runtime;

namespace {

using deepcee::test::slurp;
using deepcee::test::temp_dir;

void write(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << bytes;
}

std::string lines(const std::string& prefix, int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += prefix + " line " + std::to_string(i) + "\n%\n";
  return text;
}

bool names(const input_error& e, const fs::path& p) {
  return std::string(e.what()).find(p.string()) != std::string::npos;
}

/// A directory with two text files and everything the loader must skip.
struct fixture_corpus {
  temp_dir dir;
  std::string a = lines("alpha", 40);
  std::string b = lines("beta", 25);
  fixture_corpus() {
    write(dir.path / "a", a);
    write(dir.path / "sub" / "b", b);
    write(dir.path / "a.dat", "strfile index, text-looking but skipped");
    write(dir.path / "binary", std::string("bin\0ary\n", 8));
    fs::create_symlink("a", dir.path / "a.u8");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(text_corpus_tests)

BOOST_AUTO_TEST_CASE(directory_skips_dat_binary_and_symlinks) {
  fixture_corpus f;
  const text_corpus corpus = text_corpus::load(f.dir.path, 0.25);
  BOOST_TEST_REQUIRE(corpus.files().size() == 2u);
  BOOST_TEST(corpus.files()[0].path == f.dir.path / "a");
  BOOST_TEST(corpus.files()[1].path == f.dir.path / "sub" / "b");
  BOOST_TEST(corpus.size(corpus_split::train) + corpus.size(corpus_split::validation) ==
             f.a.size() + f.b.size());
  BOOST_TEST(corpus.text(corpus_split::train).find("skipped") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_file_is_split_at_a_line_boundary) {
  fixture_corpus f;
  const double val_fraction = 0.25;
  const text_corpus corpus = text_corpus::load(f.dir.path, val_fraction);
  const std::string originals[] = {f.a, f.b};
  for (size_t i = 0; i < corpus.files().size(); ++i) {
    const corpus_file& file = corpus.files()[i];
    const std::string& original = originals[i];
    BOOST_TEST(file.train_bytes > 0u);
    BOOST_TEST(file.validation_bytes > 0u);
    BOOST_TEST(file.train_bytes + file.validation_bytes == original.size());
    // At least the requested fraction, and less than one line more.
    BOOST_TEST(file.validation_bytes >= val_fraction * original.size());
    BOOST_TEST(file.validation_bytes < val_fraction * original.size() + 20);
    BOOST_TEST(original[file.train_bytes - 1] == '\n');
    BOOST_TEST(corpus.text(corpus_split::train).substr(file.train_begin, file.train_bytes) ==
               original.substr(0, file.train_bytes));
    BOOST_TEST(corpus.text(corpus_split::validation)
                   .substr(file.validation_begin, file.validation_bytes) ==
               original.substr(file.train_bytes));
  }
}

BOOST_AUTO_TEST_CASE(batches_depend_only_on_seed_and_step) {
  fixture_corpus f;
  const text_corpus corpus = text_corpus::load(f.dir.path, 0.25);
  const auto first = corpus.sample_batch(corpus_split::train, 4, 16, 7, 3);
  const auto again = corpus.sample_batch(corpus_split::train, 4, 16, 7, 3);
  const auto next_step = corpus.sample_batch(corpus_split::train, 4, 16, 7, 4);
  const auto other_seed = corpus.sample_batch(corpus_split::train, 4, 16, 8, 3);
  BOOST_TEST(first.tokens == again.tokens);
  BOOST_TEST(first.targets == again.targets);
  BOOST_TEST(first.tokens != next_step.tokens);
  BOOST_TEST(first.tokens != other_seed.tokens);

  // Resuming: a second corpus object loaded later gives the same batch at step 3.
  const text_corpus reloaded = text_corpus::load(f.dir.path, 0.25);
  BOOST_TEST(reloaded.sample_batch(corpus_split::train, 4, 16, 7, 3).tokens == first.tokens);
}

BOOST_AUTO_TEST_CASE(targets_are_the_next_bytes_of_the_text) {
  fixture_corpus f;
  const text_corpus corpus = text_corpus::load(f.dir.path, 0.25);
  const int batch = 8;
  const int context = 12;
  for (corpus_split split : {corpus_split::train, corpus_split::validation}) {
    const token_batch b = corpus.sample_batch(split, batch, context, 1, 0);
    BOOST_TEST(b.batch == batch);
    BOOST_TEST(b.context == context);
    BOOST_TEST_REQUIRE(b.tokens.size() == size_t(batch * context));
    BOOST_TEST_REQUIRE(b.targets.size() == size_t(batch * context));
    for (int row = 0; row < batch; ++row) {
      const auto* tokens = b.tokens.data() + row * context;
      const auto* targets = b.targets.data() + row * context;
      for (int i = 0; i + 1 < context; ++i)
        BOOST_TEST(targets[i] == tokens[i + 1]);
      std::vector<int32_t> window(tokens, tokens + context);
      window.push_back(targets[context - 1]);
      BOOST_TEST(corpus.text(split).find(byte_tokenizer::decode(window)) != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(validation_set_is_fixed_and_apart_from_training) {
  fixture_corpus f;
  const text_corpus corpus = text_corpus::load(f.dir.path, 0.25);
  const auto v0 = corpus.validation_batch(0, 4, 16, 1);
  BOOST_TEST(corpus.validation_batch(0, 4, 16, 1).tokens == v0.tokens);
  BOOST_TEST(corpus.validation_batch(1, 4, 16, 1).tokens != v0.tokens);
  BOOST_TEST(corpus.sample_batch(corpus_split::validation, 4, 16, 1, 0).tokens != v0.tokens);
  for (int32_t t : v0.tokens)
    BOOST_TEST((t >= 0 && t < 256));
}

BOOST_AUTO_TEST_CASE(single_file_loads) {
  temp_dir dir;
  write(dir.path / "one.txt", lines("only", 30));
  const text_corpus corpus = text_corpus::load(dir.path / "one.txt", 0.1);
  BOOST_TEST(corpus.files().size() == 1u);
  BOOST_TEST(corpus.size(corpus_split::validation) > 0u);
}

BOOST_AUTO_TEST_CASE(missing_and_empty_paths_are_input_errors) {
  temp_dir dir;
  const fs::path missing = dir.path / "nope";
  BOOST_CHECK_EXCEPTION(text_corpus::load(missing, 0.1), input_error,
                        [&](const input_error& e) { return names(e, missing); });
  const fs::path empty = dir.path / "empty";
  fs::create_directories(empty);
  BOOST_CHECK_EXCEPTION(text_corpus::load(empty, 0.1), input_error,
                        [&](const input_error& e) { return names(e, empty); });
  const fs::path unusable = dir.path / "unusable";
  write(unusable / "x.dat", "index");
  write(unusable / "bin", std::string("\0\1\2", 3));
  BOOST_CHECK_EXCEPTION(text_corpus::load(unusable, 0.1), input_error,
                        [&](const input_error& e) { return names(e, unusable); });
  const fs::path binary = unusable / "bin";
  BOOST_CHECK_EXCEPTION(text_corpus::load(binary, 0.1), input_error,
                        [&](const input_error& e) { return names(e, binary); });
}

BOOST_AUTO_TEST_CASE(too_short_corpus_is_an_input_error) {
  temp_dir dir;
  const fs::path file = dir.path / "short.txt";
  write(file, "tiny\ntext\n");
  const text_corpus corpus = text_corpus::load(file, 0.5);
  BOOST_CHECK_NO_THROW(corpus.require_context(3));
  BOOST_CHECK_EXCEPTION(corpus.require_context(8), input_error,
                        [&](const input_error& e) { return names(e, file); });
  BOOST_CHECK_EXCEPTION(corpus.sample_batch(corpus_split::train, 1, 64, 1, 0), input_error,
                        [&](const input_error& e) { return names(e, file); });
  BOOST_CHECK_THROW(corpus.validation_batch(0, 1, 64, 1), input_error);
}

BOOST_AUTO_TEST_CASE(debian_fortunes_load) {
  const fs::path fortunes = "/usr/share/games/fortunes";
  if (!fs::is_directory(fortunes)) {
    BOOST_TEST_MESSAGE("skipped: " << fortunes << " is absent (apt-get install fortunes)");
    return;
  }
  const text_corpus corpus = text_corpus::load(fortunes, 0.05);
  BOOST_TEST(corpus.files().size() > 10u);
  for (const corpus_file& file : corpus.files()) {
    BOOST_TEST(file.path.extension() != ".dat");
    BOOST_TEST(file.path.extension() != ".u8");
    BOOST_TEST(file.validation_bytes > 0u);
  }
  const double share =
      double(corpus.size(corpus_split::validation)) /
      double(corpus.size(corpus_split::train) + corpus.size(corpus_split::validation));
  BOOST_TEST(share > 0.05);
  BOOST_TEST(share < 0.07);
  BOOST_CHECK_NO_THROW(corpus.require_context(128));
  const auto b = corpus.sample_batch(corpus_split::train, 32, 128, 1, 0);
  BOOST_TEST(b.tokens.size() == 32u * 128u);
}

BOOST_AUTO_TEST_SUITE_END()
