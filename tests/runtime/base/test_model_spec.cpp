#include "runtime/base/model_spec.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;

namespace {

model_spec preset_spec(const char* name) {
  return make_model_spec(*model_preset(name), name);
}

} // namespace

BOOST_AUTO_TEST_SUITE(model_spec_suite)

BOOST_AUTO_TEST_CASE(layers_are_embedding_blocks_head) {
  model_spec m = preset_spec("gpt2-124m");
  BOOST_TEST(m.layers.size() == 14u);
  BOOST_TEST((m.layers.front().kind == layer_kind::embedding));
  BOOST_TEST((m.layers[1].kind == layer_kind::block));
  BOOST_TEST(m.layers[1].name == "h.0");
  BOOST_TEST(m.layers[12].name == "h.11");
  BOOST_TEST((m.layers.back().kind == layer_kind::head));
  for (size_t i = 0; i < m.layers.size(); ++i)
    BOOST_TEST(m.layers[i].index == int(i));
}

BOOST_AUTO_TEST_CASE(parameter_counts_match_gpt2) {
  // The published GPT-2 counts tie lm_head to wte; this model unties them, adding V * C.
  struct expected {
    const char* name;
    int64_t tied;
  } sizes[] = {{"gpt2-124m", 124'439'808},
               {"gpt2-355m", 354'823'168},
               {"gpt2-774m", 774'030'080},
               {"gpt2-1.5b", 1'557'611'200}};
  for (const auto& s : sizes) {
    model_spec m = preset_spec(s.name);
    const int64_t untied = int64_t(m.config.vocab) * m.config.d_model;
    BOOST_TEST(m.total_params() == s.tied + untied, s.name);
  }
  BOOST_TEST(preset_spec("small").total_params() == 875'264);
  // A block: ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj.
  const int64_t C = 768;
  BOOST_TEST(preset_spec("gpt2-124m").layers[1].params ==
             2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) +
                 (4 * C * C + C));
  // 7B class: about 6.7 billion.
  int64_t big = preset_spec("7b").total_params();
  BOOST_TEST(big > 6'500'000'000);
  BOOST_TEST(big < 7'000'000'000);
}

BOOST_AUTO_TEST_CASE(state_bytes_are_weights_grads_and_two_moments) {
  model_spec m = preset_spec("small");
  for (const auto& l : m.layers) {
    BOOST_TEST(l.param_bytes == 4 * l.params);
    BOOST_TEST(l.grad_bytes == 4 * l.params);
    BOOST_TEST(l.optimizer_bytes == 8 * l.params);
  }
  BOOST_TEST(m.total_state_bytes() == 16 * m.total_params());
}

BOOST_AUTO_TEST_CASE(flops_by_hand_for_the_small_model) {
  model_spec m = preset_spec("small"); // C = T = 128, H = 4, V = 256
  const double C = 128, T = 128, V = 256;
  layer_work blk = work_at(m.layers[1], 2);
  const double N = 2 * T;
  BOOST_TEST(blk.f_flops == 2 * N * 12 * C * C + 4 * 2 * T * T * C);
  BOOST_TEST(blk.f_flops == 117'440'512.0);
  BOOST_TEST(blk.b_flops == 2 * N * 12 * C * C + 8 * 2 * T * T * C);
  BOOST_TEST(blk.w_flops == 2 * N * 12 * C * C);
  layer_work head = work_at(m.layers.back(), 2);
  BOOST_TEST(head.f_flops == 2 * N * C * V);
  BOOST_TEST(head.b_flops == head.f_flops);
  BOOST_TEST(head.w_flops == head.f_flops);
  layer_work emb = work_at(m.layers[0], 2);
  BOOST_TEST(emb.f_flops == 0);
  BOOST_TEST(emb.b_flops == 0);
  BOOST_TEST(emb.b_bytes == 0);
  BOOST_TEST(emb.f_bytes > 0); // memory bound, not free
}

BOOST_AUTO_TEST_CASE(activation_bytes_by_hand) {
  model_spec m = preset_spec("small");
  const int64_t C = 128, T = 128, H = 4, V = 256, b = 2;
  layer_work blk = work_at(m.layers[1], int(b));
  // F -> B: 19C + 4 floats per token and the [H, T, T] probabilities per sample.
  BOOST_TEST(blk.act_until_b == 4 * b * (T * (19 * C + 4) + H * T * T));
  BOOST_TEST(blk.act_until_b == 3'018'752);
  // B -> W: matmul inputs 7C, output gradients 9C, two LayerNorms 2 * (2C + 2).
  BOOST_TEST(blk.act_until_w == 4 * b * T * (20 * C + 4));
  BOOST_TEST(blk.act_until_w < blk.act_until_b);
  layer_work head = work_at(m.layers.back(), int(b));
  BOOST_TEST(head.act_until_b == 4 * b * T * (2 * C + V + 3));
  BOOST_TEST(head.act_until_w == 4 * b * T * (3 * C + V + 2));
  layer_work emb = work_at(m.layers[0], int(b));
  BOOST_TEST(emb.act_until_b == 4 * b * T);
  BOOST_TEST(emb.act_until_w == 4 * b * T * (1 + C));
}

BOOST_AUTO_TEST_CASE(a_recomputing_stage_keeps_its_input_and_pays_a_second_forward) {
  model_spec m = preset_spec("small");
  const double C = 128, T = 128, b = 2;
  const stage_figures plain{1.0, 2.0, 3.0, 5e6, 4e6, 0};
  // Without recomputation nothing changes.
  const stage_figures same = with_recompute(plain, false, m, 1, 3, 2);
  BOOST_TEST(same.b_s == 2.0);
  BOOST_TEST(same.act_until_b == 5e6);
  BOOST_TEST(same.rebuilt_bytes == 0);
  // Blocks 1-2: the input activation [b, T, C] fp32 is kept; B runs F again first.
  const stage_figures mid = with_recompute(plain, true, m, 1, 3, 2);
  BOOST_TEST(mid.act_until_b == 4 * b * T * C);
  BOOST_TEST(mid.rebuilt_bytes == 5e6 - 4 * b * T * C);
  BOOST_TEST(mid.f_s == 1.0);
  BOOST_TEST(mid.b_s == 3.0);
  BOOST_TEST(mid.w_s == 3.0);
  BOOST_TEST(mid.act_until_w == 4e6); // what W needs is kept as before
  // The embedding's stage keeps the token ids; the head's also its targets.
  BOOST_TEST(recompute_kept_bytes(m, 0, 2, 2) == 4 * b * T);
  BOOST_TEST(recompute_kept_bytes(m, 3, 6, 2) == 4 * b * T * C + 4 * b * T);
  BOOST_TEST(recompute_kept_bytes(m, 0, 6, 2) == 2 * 4 * b * T);
  // Never more than the stage would keep anyway.
  const stage_figures tiny{1.0, 2.0, 3.0, 100.0, 50.0, 0};
  BOOST_TEST(with_recompute(tiny, true, m, 1, 3, 2).act_until_b == 100.0);
  BOOST_TEST(with_recompute(tiny, true, m, 1, 3, 2).rebuilt_bytes == 0.0);
}

BOOST_AUTO_TEST_CASE(work_is_linear_in_the_micro_batch) {
  model_spec m = preset_spec("gpt2-124m");
  for (const auto& l : m.layers) {
    layer_work one = work_at(l, 1), four = work_at(l, 4);
    BOOST_TEST(four.f_flops == 4 * one.f_flops);
    BOOST_TEST(four.w_flops == 4 * one.w_flops);
    BOOST_TEST(four.act_until_b == 4 * one.act_until_b);
    BOOST_TEST(four.act_until_w == 4 * one.act_until_w);
    BOOST_TEST(four.f_bytes > one.f_bytes);
  }
}

BOOST_AUTO_TEST_CASE(transfer_bytes_per_compression) {
  model_spec m = preset_spec("small");
  BOOST_TEST(m.boundary_bytes_per_sample() == 128 * 128 * 4);
  BOOST_TEST(m.transfer_bytes(2, compression::none) == 131'072);
  BOOST_TEST(m.transfer_bytes(2, compression::fp16) == 65'536);
  BOOST_TEST(m.transfer_bytes(2, compression::bf16) == 65'536);
  BOOST_TEST(m.transfer_bytes(2, compression::int8) == 32'768 + 256 * 4);
  BOOST_TEST((parse_compression("int8") == compression::int8));
  BOOST_TEST(!parse_compression("zip").has_value());
}

BOOST_AUTO_TEST_CASE(presets_and_invalid_sizes) {
  BOOST_TEST(model_preset_names().size() == 6u);
  auto small = *model_preset("small");
  BOOST_TEST(small.n_layer == 4);
  BOOST_TEST(small.vocab == 256);
  auto xl = *model_preset("gpt2-1.5b");
  BOOST_TEST(xl.n_head == 25);
  BOOST_TEST(!model_preset("gpt5").has_value());
  model_config bad = small;
  bad.n_head = 3;
  BOOST_CHECK_THROW(make_model_spec(bad), std::invalid_argument);
  bad = small;
  bad.n_layer = 0;
  BOOST_CHECK_THROW(make_model_spec(bad), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
