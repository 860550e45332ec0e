// kernels/profile: the layer timings run the real layers and count the bytes they keep.
#include "kernels/device/make_backend.hpp"
#include "kernels/profile/device_profiler.hpp"
#include "kernels/profile/layer_timing.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee;
using namespace deepcee::kernels;
using runtime::layer_kind;

namespace {

runtime::model_config tiny() {
  runtime::model_config m;
  m.n_layer = 2;
  m.d_model = 32;
  m.n_head = 2;
  m.context = 16;
  m.vocab = 64;
  return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(layer_timing_suite)

BOOST_AUTO_TEST_CASE(the_embedding_keeps_its_tokens_then_the_output_gradient) {
  auto be = make_backend({});
  const auto m = tiny();
  const layer_timing t = time_layer(*be, m, layer_kind::embedding, 3, {0, 1});
  BOOST_TEST(t.act_until_b == 3 * 16 * 4);                   // the tokens, i32
  BOOST_TEST(t.act_until_w == 3 * 16 * 4 + 3 * 16 * 32 * 4); // and dy, f32
  BOOST_TEST(t.f_s > 0);
  BOOST_TEST(t.w_s > 0);
}

BOOST_AUTO_TEST_CASE(kept_bytes_grow_with_the_micro_batch) {
  auto be = make_backend({});
  const auto m = tiny();
  for (auto kind : {layer_kind::embedding, layer_kind::block, layer_kind::head}) {
    const layer_timing one = time_layer(*be, m, kind, 1, {1, 3});
    const layer_timing two = time_layer(*be, m, kind, 2, {1, 3});
    BOOST_TEST(one.act_until_b > 0);
    BOOST_TEST(two.act_until_b == 2 * one.act_until_b);
    BOOST_TEST(two.act_until_w == 2 * one.act_until_w);
    BOOST_TEST(one.f_s > 0);
    BOOST_TEST(one.b_s >= 0); // the embedding's B has nothing to compute
    BOOST_TEST(one.w_s > 0);
  }
  // The head keeps its softmax probabilities [B, T, V] from F until B.
  BOOST_TEST(time_layer(*be, m, layer_kind::head, 1, {0, 1}).act_until_b >= 16 * 64 * 4);
  BOOST_CHECK_THROW(time_layer(*be, m, layer_kind::block, 0, {0, 1}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_node_without_gpus_measures_its_cpu_and_says_the_gpu_is_skipped) {
  profile_request r;
  r.model = tiny();
  r.model_name = "tiny";
  r.micro_batches = {1, 2};
  r.timing = {0, 1};
  const local_devices found = find_local_devices(r);
  BOOST_TEST_REQUIRE(found.devices.size() >= 1u);
  BOOST_TEST(found.devices[0].kind == "CPU");
  if (visible_cuda_devices() == 0) {
    BOOST_TEST_REQUIRE(found.skipped.size() == 1u);
    BOOST_TEST(found.skipped[0].find("GPU skipped") == 0u);
  }
  r.gpus = false;
  const auto p = measure_devices(find_local_devices(r), r, "test-build");
  BOOST_TEST(p.format_version == runtime::profile_format_version);
  BOOST_TEST(p.entries.size() == 6u);
  BOOST_TEST(p.fingerprint.size() == 16u);
  BOOST_TEST(p.devices[0].identity.find("1 OpenBLAS thread") != std::string::npos);
  BOOST_TEST_REQUIRE(p.optimizers.size() == 3u); // one step per layer kind
  for (const auto& o : p.optimizers) {
    BOOST_TEST(o.device_kind == "CPU");
    BOOST_TEST(o.step_s > 0);
  }
}

BOOST_AUTO_TEST_CASE(the_optimizer_step_is_timed_over_the_layers_parameters) {
  auto be = make_backend({});
  auto small = tiny(), wide = tiny();
  wide.d_model = 128; // 16 times the block's matrices
  const double one = time_optimizer_step(*be, small, layer_kind::block, {1, 5});
  const double sixteen = time_optimizer_step(*be, wide, layer_kind::block, {1, 5});
  BOOST_TEST(one > 0);
  BOOST_TEST(sixteen > 2 * one);
  BOOST_CHECK_THROW(time_optimizer_step(*be, small, layer_kind::head, {0, 0}),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(gpu_names_map_to_catalogue_kinds) {
  BOOST_TEST(*catalogue_kind_of("NVIDIA GeForce RTX 3090") == "RTX3090");
  BOOST_TEST(*catalogue_kind_of("NVIDIA H100 80GB HBM3") == "H100-SXM");
  BOOST_TEST(!catalogue_kind_of("Matrox G200").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
