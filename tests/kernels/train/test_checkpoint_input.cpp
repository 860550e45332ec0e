// Checkpoints that are not what deepcee wrote: a negative step, no format key, NaN weights,
// flipped or missing bytes. Each is refused with one input_error naming the file, never
// accepted (a negative step trained with a negative learning rate) and never a crash.
#include "kernels/train/checkpoint.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/safetensors.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

using namespace deepcee;
using namespace deepcee::kernels;
namespace fs = std::filesystem;

namespace {

/// A small checkpoint written from host copies: two parameters with both moments.
fs::path small_checkpoint(const fs::path& dir) {
  std::vector<parameter_state> params = {
      {"wte.weight", {4, 2}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f}, {}, {}},
      {"ln_f.bias", {2}, {0.0f, 1.0f}, {}, {}}};
  for (auto& p : params) {
    p.exp_avg.assign(p.value.size(), 0.01f);
    p.exp_avg_sq.assign(p.value.size(), 0.001f);
  }
  checkpoint_info info;
  info.step = 7;
  info.seed = 3;
  const fs::path file = dir / "checkpoint.safetensors";
  save_checkpoint(file, params, info);
  return file;
}

/// Rewrites `file` after `edit` changed its metadata or tensors.
void rewrite(const fs::path& file,
             const std::function<void(std::map<std::string, std::string>&,
                                      std::vector<runtime::named_tensor>&)>& edit) {
  runtime::safetensors_file f = runtime::read_safetensors(file);
  edit(f.metadata, f.tensors);
  runtime::write_safetensors(file, f.tensors, f.metadata);
}

std::string refusal(const fs::path& file) {
  try {
    read_checkpoint(file);
  } catch (const runtime::input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_input_tests)

BOOST_AUTO_TEST_CASE(a_written_checkpoint_reads_back) {
  test::temp_dir dir;
  const fs::path file = small_checkpoint(dir.path);
  const checkpoint_contents c = read_checkpoint(file);
  BOOST_TEST(c.info.step == 7);
  BOOST_TEST(c.params.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_negative_or_partial_step_is_refused) {
  test::temp_dir dir;
  const fs::path file = small_checkpoint(dir.path);
  rewrite(file, [](auto& meta, auto&) { meta["step"] = "-5"; });
  BOOST_TEST(refusal(file) == file.string() + ": metadata 'step' must be in 0..2147483647, got -5");
  rewrite(file, [](auto& meta, auto&) { meta["step"] = "12abc"; });
  BOOST_TEST(refusal(file) == file.string() + ": metadata 'step' is not a whole number: \"12abc\"");
  rewrite(file, [](auto& meta, auto&) {
    meta["step"] = "7";
    meta["n_head"] = "3";
  });
  BOOST_TEST(
      refusal(file).rfind(file.string() + ": metadata 'd_model' (128) is not divisible", 0) == 0);
}

BOOST_AUTO_TEST_CASE(a_file_without_the_format_key_is_not_a_checkpoint) {
  test::temp_dir dir;
  const fs::path file = small_checkpoint(dir.path);
  rewrite(file, [](auto& meta, auto&) { meta.erase("format"); });
  BOOST_TEST(refusal(file) ==
             file.string() + ": not a deepcee checkpoint: metadata has no 'format'");
  BOOST_CHECK_THROW(read_checkpoint_info(file), runtime::input_error);
  rewrite(file, [](auto& meta, auto&) { meta["format"] = "pt"; });
  BOOST_TEST(refusal(file) ==
             file.string() + ": metadata 'format' is \"pt\", expected \"deepcee-checkpoint-1\"");
}

BOOST_AUTO_TEST_CASE(nan_weights_and_negative_second_moments_are_refused) {
  test::temp_dir dir;
  const fs::path file = small_checkpoint(dir.path);
  auto poke = [&](const std::string& name, float value) {
    rewrite(file, [&](auto&, auto& tensors) {
      for (auto& t : tensors)
        if (t.name == name) {
          std::vector<float> v = t.to_f32();
          v[1] = value;
          t = runtime::named_tensor::f32(t.name, t.shape, v);
        }
    });
  };
  poke("wte.weight", std::numeric_limits<float>::quiet_NaN());
  BOOST_TEST(refusal(file) ==
             file.string() + ": tensor 'wte.weight' holds nan at index 1 (values must be finite)");
  poke("wte.weight", 0.2f);
  BOOST_TEST(refusal(file) == "");
  poke("optimizer.exp_avg_sq.ln_f.bias", -1.0f);
  BOOST_TEST(refusal(file).rfind(
                 file.string() + ": tensor 'optimizer.exp_avg_sq.ln_f.bias' holds -1", 0) == 0);
  poke("optimizer.exp_avg_sq.ln_f.bias", 0.0f);
  poke("optimizer.exp_avg.wte.weight", std::numeric_limits<float>::infinity());
  BOOST_TEST(refusal(file).rfind(
                 file.string() + ": tensor 'optimizer.exp_avg.wte.weight' holds inf", 0) == 0);
}

BOOST_AUTO_TEST_CASE(flipped_and_truncated_checkpoints_are_refused_naming_the_file) {
  test::temp_dir dir;
  const fs::path good = small_checkpoint(dir.path);
  const std::string bytes = test::slurp(good);
  const fs::path file = dir.path / "fuzzed.safetensors";
  std::mt19937_64 rng(44);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int rounds = 0, refused = 0;
  for (; rounds < 1000 && std::chrono::steady_clock::now() < deadline; ++rounds) {
    std::string b = bytes;
    if (rng() % 4 == 0) {
      b.resize(rng() % b.size());
    } else {
      for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
        b[rng() % b.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    std::ofstream(file, std::ios::binary | std::ios::trunc) << b;
    try {
      const checkpoint_contents c = read_checkpoint(file);
      // Accepted: then it is a checkpoint deepcee could train on.
      BOOST_TEST(c.info.step >= 0);
      for (const auto& p : c.params)
        for (float v : p.value)
          BOOST_TEST(std::isfinite(v));
    } catch (const runtime::input_error& e) {
      ++refused;
      const std::string what = e.what();
      BOOST_TEST(what.rfind(file.string() + ": ", 0) == 0, what);
      BOOST_TEST(what.find('\n') == std::string::npos, what);
    } catch (const std::exception& e) {
      BOOST_FAIL("not an input_error: " << e.what());
    }
  }
  BOOST_TEST(rounds >= 50);
  BOOST_TEST(refused > rounds / 2);
}

BOOST_AUTO_TEST_SUITE_END()
