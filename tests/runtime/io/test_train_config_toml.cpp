#include "runtime/io/train_config_toml.hpp"

#include "runtime/base/errors.hpp"

#include <boost/test/unit_test.hpp>

#include "tests/support/clusters.hpp"
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

/// The message of the input_error that loading `text` from a file throws ("" if none).
std::string load_error(const temp_dir& dir, const std::string& text, fs::path* file_out = nullptr) {
  const fs::path file = dir.path / "job.toml";
  std::ofstream(file) << text;
  if (file_out)
    *file_out = file;
  try {
    load_train_config(file);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(train_config_toml_tests)

BOOST_AUTO_TEST_CASE(empty_file_gives_the_defaults) {
  const train_config config = parse_train_config("", "empty.toml");
  const train_config defaults;
  BOOST_TEST(config.batch == defaults.batch);
  BOOST_TEST(config.steps == defaults.steps);
  BOOST_TEST(config.seed == defaults.seed);
  BOOST_TEST(config.device == defaults.device);
  BOOST_TEST(config.bf16 == defaults.bf16);
  BOOST_TEST(config.threads == defaults.threads);
  BOOST_TEST(config.eval_every == defaults.eval_every);
  BOOST_TEST(config.eval_batches == defaults.eval_batches);
  BOOST_TEST(config.checkpoint_every == defaults.checkpoint_every);
  BOOST_TEST(config.metrics_format == defaults.metrics_format);
  BOOST_TEST(config.model.n_layer == defaults.model.n_layer);
  BOOST_TEST(config.model.d_model == defaults.model.d_model);
  BOOST_TEST(config.model.n_head == defaults.model.n_head);
  BOOST_TEST(config.model.context == defaults.model.context);
  BOOST_TEST(config.model.vocab == defaults.model.vocab);
  BOOST_TEST(config.optimizer.lr == defaults.optimizer.lr);
  BOOST_TEST(config.optimizer.beta2 == defaults.optimizer.beta2);
  BOOST_TEST(config.optimizer.grad_clip == defaults.optimizer.grad_clip);
  BOOST_TEST(config.data.path == defaults.data.path);
  BOOST_TEST(config.data.val_fraction == defaults.data.val_fraction);
  // Relative paths are resolved against the current directory.
  BOOST_TEST(config.out == fs::current_path() / "runs");
  BOOST_CHECK_NO_THROW(validate(defaults));
}

BOOST_AUTO_TEST_CASE(single_toml_parses) {
  const train_config config =
      load_train_config(deepcee::test::repo_root() / "configs" / "single.toml");
  BOOST_TEST(config.steps == 1200);
  BOOST_TEST(config.batch == 32);
  BOOST_TEST(config.model.context == 128);
  BOOST_TEST(config.optimizer.lr == 3e-3);
  BOOST_TEST(config.optimizer.warmup_steps == 20);
  BOOST_TEST(config.data.path == fs::path("/usr/share/games/fortunes"));
  BOOST_TEST(config.metrics_format == "csv");
}

BOOST_AUTO_TEST_CASE(every_key_is_read) {
  const train_config c = parse_train_config(R"(
seed = 18446744073709551
steps = 0
batch = 3
device = "cuda"
bf16 = true
threads = 0
eval_every = 5
eval_batches = 2
checkpoint_every = 7
out = "/tmp/x/../runs2"
metrics_format = "jsonl"
[model]
vocab = 256
n_layer = 2
d_model = 96
n_head = 3
context = 64
[optimizer]
lr = 1
min_lr_ratio = 0.0
warmup_steps = 0
beta1 = 0.0
beta2 = 0.999
eps = 1e-6
weight_decay = 0.0
grad_clip = 0
[data]
path = "corpus"
val_fraction = 0.5
)",
                                            "all.toml");
  BOOST_TEST(c.seed == 18446744073709551ULL);
  BOOST_TEST(c.steps == 0);
  BOOST_TEST(c.batch == 3);
  BOOST_TEST(c.device == "cuda");
  BOOST_TEST(c.bf16);
  BOOST_TEST(c.threads == 0);
  BOOST_TEST(c.eval_every == 5);
  BOOST_TEST(c.eval_batches == 2);
  BOOST_TEST(c.checkpoint_every == 7);
  BOOST_TEST(c.out == fs::path("/tmp/runs2"));
  BOOST_TEST(c.metrics_format == "jsonl");
  BOOST_TEST(c.model.n_layer == 2);
  BOOST_TEST(c.model.d_model == 96);
  BOOST_TEST(c.model.n_head == 3);
  BOOST_TEST(c.model.context == 64);
  BOOST_TEST(c.optimizer.lr == 1.0);
  BOOST_TEST(c.optimizer.min_lr_ratio == 0.0);
  BOOST_TEST(c.optimizer.beta2 == 0.999);
  BOOST_TEST(c.optimizer.eps == 1e-6);
  BOOST_TEST(c.optimizer.grad_clip == 0.0);
  BOOST_TEST(c.data.path == fs::current_path() / "corpus");
  BOOST_TEST(c.data.val_fraction == 0.5);
}

BOOST_AUTO_TEST_CASE(missing_file) {
  temp_dir dir;
  const fs::path file = dir.path / "absent.toml";
  BOOST_CHECK_EXCEPTION(load_train_config(file), input_error, [&](const input_error& e) {
    return std::string(e.what()) == file.string() + ": config file does not exist";
  });
}

BOOST_AUTO_TEST_CASE(syntax_error_names_the_line) {
  temp_dir dir;
  fs::path file;
  const std::string what = load_error(dir, "batch = 4\n\nsteps = = 3\n", &file);
  BOOST_TEST_MESSAGE(what);
  BOOST_TEST(what.rfind(file.string() + ":3: TOML syntax error: ", 0) == 0);
}

BOOST_AUTO_TEST_CASE(errors_name_file_line_and_key) {
  temp_dir dir;
  const fs::path file = dir.path / "job.toml";
  struct error_case {
    std::string text;
    int line;
    std::string message;
  };
  const error_case cases[] = {
      {"batch = 4\n[optimizer]\nlr = 0.1\nlrr = 0.2\n", 4, "unknown key 'optimizer.lrr'"},
      {"# comment\nbach = 4\n", 2, "unknown key 'bach'"},
      {"[modell]\nn_layer = 2\n", 1, "unknown key 'modell'"},
      {"[model]\nn_layer = 2\n[model.extra]\n", 3, "unknown key 'model.extra'"},
      {"batch = \"32\"\n", 1, "'batch' must be an integer"},
      {"batch = 3.5\n", 1, "'batch' must be an integer"},
      {"\n[optimizer]\nlr = \"fast\"\n", 3, "'optimizer.lr' must be a number"},
      {"bf16 = 1\n", 1, "'bf16' must be a boolean"},
      {"device = 1\n", 1, "'device' must be a string"},
      {"model = 3\n", 1, "'model' must be a table"},
      {"batch = 99999999999\n", 1, "'batch' is out of range, got 99999999999"},
      {"seed = -1\n", 1, "'seed' must be >= 0, got -1"},
      {"\n\nbatch = 0\n", 3, "'batch' must be >= 1, got 0"},
      {"steps = -1\n", 1, "'steps' must be >= 0, got -1"},
      {"threads = -2\n", 1, "'threads' must be >= 0, got -2"},
      {"[model]\nn_layer = 0\n", 2, "'model.n_layer' must be >= 1, got 0"},
      {"[model]\ncontext = 0\n", 2, "'model.context' must be >= 1, got 0"},
      {"[model]\nvocab = 512\n", 2, "'model.vocab' must be 256 (byte tokens), got 512"},
      {"[model]\nd_model = 130\nn_head = 4\n", 2,
       "'model.d_model' (130) must be divisible by 'model.n_head' (4)"},
      {"[model]\nn_head = 3\n", 2, "'model.d_model' (128) must be divisible by 'model.n_head' (3)"},
      {"[optimizer]\nlr = 0\n", 2, "'optimizer.lr' must be > 0, got 0"},
      {"[optimizer]\nbeta1 = 1.0\n", 2, "'optimizer.beta1' must be in [0, 1), got 1"},
      {"[optimizer]\nbeta2 = -0.1\n", 2, "'optimizer.beta2' must be in [0, 1), got -0.1"},
      {"[optimizer]\neps = 0.0\n", 2, "'optimizer.eps' must be > 0, got 0"},
      {"[data]\nval_fraction = 0\n", 2, "'data.val_fraction' must be in (0, 1), got 0"},
      {"[data]\nval_fraction = 1.0\n", 2, "'data.val_fraction' must be in (0, 1), got 1"},
      {"[data]\npath = \"\"\n", 2, "'data.path' must not be empty"},
      {"device = \"tpu\"\n", 1, "'device' must be \"cpu\" or \"cuda\", got \"tpu\""},
      {"metrics_format = \"xml\"\n", 1,
       "'metrics_format' must be \"csv\" or \"jsonl\", got \"xml\""},
  };
  for (const error_case& c : cases) {
    BOOST_TEST_CONTEXT(c.text) {
      BOOST_TEST(load_error(dir, c.text) ==
                 file.string() + ":" + std::to_string(c.line) + ": " + c.message);
    }
  }
}

BOOST_AUTO_TEST_CASE(validate_checks_overrides_without_a_line) {
  train_config config;
  config.batch = 0;
  BOOST_CHECK_EXCEPTION(validate(config), input_error, [](const input_error& e) {
    return std::string(e.what()) == "train config: 'batch' must be >= 1, got 0";
  });
  config.batch = 4;
  config.model.n_head = 5;
  BOOST_CHECK_EXCEPTION(validate(config, "command line"), input_error, [](const input_error& e) {
    return std::string(e.what()) ==
           "command line: 'model.d_model' (128) must be divisible by 'model.n_head' (5)";
  });
  config.model.n_head = 0;
  BOOST_CHECK_THROW(validate(config), input_error);
  config.model.n_head = 4;
  config.device = "gpu";
  BOOST_CHECK_THROW(validate(config), input_error);
  config.device = "cpu";
  BOOST_CHECK_NO_THROW(validate(config));
}

BOOST_AUTO_TEST_SUITE_END()
