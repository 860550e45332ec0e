// Training end to end on one device: the loss falls, checkpoints round-trip bit-exactly,
// and a resumed run continues the uninterrupted run's loss curve exactly.
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/safetensors.hpp"
#include "tests/support/gpt_test_util.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

using namespace deepcee;
using namespace deepcee::kernels;
namespace fs = std::filesystem;

namespace {

runtime::text_corpus toy_corpus() {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) + "\n";
  return runtime::text_corpus::from_texts(text, text.substr(0, 2000));
}

runtime::train_config toy_config() {
  runtime::train_config c;
  c.model = test::tiny_model();
  c.batch = 4;
  c.steps = 40;
  c.eval_batches = 2;
  c.optimizer.lr = 1e-2;
  c.optimizer.warmup_steps = 5;
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(trainer_tests)

BOOST_AUTO_TEST_CASE(loss_falls) {
  auto be = make_backend({});
  auto corpus = toy_corpus();
  trainer t(*be, toy_config(), corpus);
  double first_val = t.validation_loss();
  BOOST_TEST(std::abs(first_val - std::log(256.0)) < 0.3); // starts near uniform
  double last = 0;
  for (int i = 0; i < 40; ++i)
    last = t.train_step().loss;
  BOOST_TEST(last < 0.6 * first_val);
  BOOST_TEST(t.validation_loss() < 0.6 * first_val);
}

BOOST_AUTO_TEST_CASE(checkpoint_round_trip_is_bit_exact) {
  auto be = make_backend({});
  auto corpus = toy_corpus();
  test::temp_dir tmp;
  const fs::path& dir = tmp.path;
  trainer a(*be, toy_config(), corpus);
  a.train_step();
  a.train_step();
  a.save(dir / "a.safetensors");

  auto file = runtime::read_safetensors(dir / "a.safetensors");
  BOOST_TEST(file.metadata.at("step") == "2");
  BOOST_REQUIRE(file.find("transformer.h.1.attn.c_attn.weight") != nullptr);
  BOOST_TEST(
      (file.find("transformer.h.1.attn.c_attn.weight")->shape == std::vector<int64_t>{16, 48}));
  BOOST_TEST(file.find("optimizer.exp_avg_sq.lm_head.weight") != nullptr);

  trainer b(*be, toy_config(), corpus);
  b.resume(dir / "a.safetensors");
  BOOST_TEST(b.steps_done() == 2);
  b.save(dir / "b.safetensors");
  BOOST_TEST(test::slurp(dir / "a.safetensors") == test::slurp(dir / "b.safetensors"));
}

BOOST_AUTO_TEST_CASE(resume_continues_the_same_loss_curve) {
  auto be = make_backend({});
  auto corpus = toy_corpus();
  test::temp_dir tmp;
  const fs::path& dir = tmp.path;
  trainer straight(*be, toy_config(), corpus);
  std::vector<double> expected;
  for (int i = 0; i < 6; ++i)
    expected.push_back(straight.train_step().loss);

  trainer first(*be, toy_config(), corpus);
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(first.train_step().loss == expected[i]);
  first.save(dir / "mid.safetensors");
  trainer second(*be, toy_config(), corpus);
  second.resume(dir / "mid.safetensors");
  for (int i = 3; i < 6; ++i) {
    auto r = second.train_step();
    BOOST_TEST(r.step == i + 1);
    BOOST_TEST(r.loss == expected[i]);
  }
}

BOOST_AUTO_TEST_CASE(bad_checkpoints_are_input_errors_and_change_nothing) {
  auto be = make_backend({});
  auto corpus = toy_corpus();
  test::temp_dir tmp;
  const fs::path& dir = tmp.path;
  trainer a(*be, toy_config(), corpus);
  a.save(dir / "ok.safetensors");

  // Truncated.
  {
    std::string bytes = test::slurp(dir / "ok.safetensors");
    std::ofstream out(dir / "short.safetensors", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  trainer b(*be, toy_config(), corpus);
  BOOST_CHECK_THROW(b.resume(dir / "short.safetensors"), runtime::input_error);

  // Another model size.
  runtime::train_config wide = toy_config();
  wide.model.d_model = 32;
  trainer c(*be, wide, corpus);
  try {
    c.resume(dir / "ok.safetensors");
    BOOST_FAIL("a checkpoint of another size was accepted");
  } catch (const runtime::input_error& e) {
    BOOST_TEST(std::string(e.what()).find("ok.safetensors") != std::string::npos);
  }

  // A tensor of the wrong shape, under the right metadata: nothing may change.
  auto file = runtime::read_safetensors(dir / "ok.safetensors");
  for (auto& t : file.tensors)
    if (t.name == "transformer.h.0.mlp.c_fc.weight")
      t = runtime::named_tensor::f32(t.name, {64, 16}, t.to_f32());
  runtime::write_safetensors(dir / "shape.safetensors", file.tensors, file.metadata);
  auto before = be->to_host<float>(b.model().parameters()[0]->value);
  BOOST_CHECK_THROW(b.resume(dir / "shape.safetensors"), runtime::input_error);
  BOOST_TEST(be->to_host<float>(b.model().parameters()[0]->value) == before);
  BOOST_TEST(b.steps_done() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
