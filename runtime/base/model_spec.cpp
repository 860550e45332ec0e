#include "runtime/base/model_spec.hpp"

#include <algorithm>
#include <stdexcept>

namespace deepcee::runtime {
namespace {

constexpr int64_t fp32 = 4;

/// AdamW keeps two fp32 moments per parameter; gradients are fp32 like the weights.
void set_state(layer_spec& l, const model_config& m) {
  l.tokens = m.context;
  l.width = m.d_model;
  l.param_bytes = l.params * fp32;
  l.grad_bytes = l.params * fp32;
  l.optimizer_bytes = 2 * l.params * fp32;
}

/// Token and position embedding. F gathers rows, so it has no FLOPs to speak of and is
/// bound by memory traffic. B has nothing to do (the input is token ids); it only hands
/// the incoming gradient to W, which scatter-adds it into the wte and wpe rows.
layer_spec embedding(const model_config& m) {
  const int64_t C = m.d_model, T = m.context, V = m.vocab;
  layer_spec l;
  l.kind = layer_kind::embedding;
  l.name = "embedding";
  l.params = V * C + T * C;
  set_state(l, m);
  l.f_traffic = double(T * (3 * C + 1) * fp32); // read ids, wte row, wpe row; write out
  l.w_traffic = double(T * (5 * C + 1) * fp32); // read dout and ids; read+write grad rows
  l.act_until_b = T * fp32;                     // token ids
  l.act_until_w = T * (1 + C) * fp32;           // token ids + dout [T, C]
  l.kernels_f = 1;
  l.kernels_w = 1;
  return l;
}

/// A pre-LayerNorm block, per sample of T tokens. All counts are in fp32 elements.
///
/// Kept from F until B, per token. The attention half keeps block input x (LN1 input) C,
/// LN1 mean+rstd 2, LN1 out C, qkv 3C, q/k/v split 3C and attention output (c_proj input)
/// C. The MLP half keeps residual x + attn (LN2 input) C, LN2 mean+rstd 2, LN2 out C,
/// pre-GELU 4C and GELU out 4C. That is 19C + 4 per token, plus the attention
/// probabilities [H, T, T] per sample.
///
/// Kept from B until W, per token, is what W needs. The inputs of the four matmuls are
/// LN1 out C, attention output C, LN2 out C and GELU out 4C: 7C. Their output gradients
/// are qkv 3C, c_proj C, c_fc 4C and mlp c_proj C: 9C. Both LayerNorms keep x C,
/// mean+rstd 2 and dy C: 4C + 4. In all 20C + 4.
///
/// FLOPs: the four matmuls cost 2 * T * 12C^2 for each of F, B and W. Attention uses full
/// T x T score matrices, with the causal mask applied after. It costs 4 T^2 C in F (QK^T
/// and AV), twice that in B, and nothing in W. Elementwise ops are left to the traffic term.
layer_spec block(const model_config& m, int i) {
  const int64_t C = m.d_model, T = m.context, H = m.n_head;
  layer_spec l;
  l.index = i;
  l.kind = layer_kind::block;
  l.name = "h." + std::to_string(i - 1);
  l.params = 12 * C * C + 13 * C;
  set_state(l, m);
  const double matmul = 2.0 * double(T) * 12.0 * double(C) * double(C);
  const double attn = double(T) * double(T) * double(C);
  l.f_flops = matmul + 4 * attn;
  l.b_flops = matmul + 8 * attn;
  l.w_flops = matmul;
  const int64_t kept_b = T * (19 * C + 4) + H * T * T;
  const int64_t kept_w = T * (20 * C + 4);
  l.act_until_b = kept_b * fp32;
  l.act_until_w = kept_w * fp32;
  // Every kept tensor is written once and read once in F, plus the block output; B reads
  // what F kept, writes the gradients W keeps, the score gradients and dx; W reads its part.
  l.f_traffic = double((2 * kept_b + T * C) * fp32);
  l.b_traffic = double((kept_b + H * T * T + 12 * T * C) * fp32);
  l.w_traffic = double(kept_w * fp32);
  l.kernels_f = 14;
  l.kernels_b = 14;
  l.kernels_w = 8;
  return l;
}

/// ln_f, lm_head [V, C] (no bias, untied from wte) and softmax cross-entropy.
/// Kept from F until B, per token: x C, mean+rstd 2, ln_f out C, probabilities V, target 1.
/// Kept from B until W, per token: ln_f out C, logits gradient V, LayerNorm x C,
/// mean+rstd 2, dy C.
layer_spec head(const model_config& m, int i) {
  const int64_t C = m.d_model, T = m.context, V = m.vocab;
  layer_spec l;
  l.index = i;
  l.kind = layer_kind::head;
  l.name = "head";
  l.params = 2 * C + V * C;
  set_state(l, m);
  const double matmul = 2.0 * double(T) * double(C) * double(V);
  l.f_flops = matmul;
  l.b_flops = matmul;
  l.w_flops = matmul;
  l.act_until_b = T * (2 * C + V + 3) * fp32;
  l.act_until_w = T * (3 * C + V + 2) * fp32;
  l.f_traffic = double(T * (3 * C + 3 * V) * fp32);
  l.b_traffic = double(T * (4 * C + 2 * V) * fp32);
  l.w_traffic = double(T * (3 * C + V) * fp32);
  l.kernels_f = 3;
  l.kernels_b = 3;
  l.kernels_w = 2;
  return l;
}

} // namespace

std::string_view to_string(layer_kind k) {
  switch (k) {
  case layer_kind::embedding:
    return "embedding";
  case layer_kind::block:
    return "block";
  case layer_kind::head:
    return "head";
  }
  return "?";
}

std::string_view to_string(compression c) {
  switch (c) {
  case compression::none:
    return "none";
  case compression::fp16:
    return "fp16";
  case compression::bf16:
    return "bf16";
  case compression::int8:
    return "int8";
  }
  return "?";
}

std::optional<compression> parse_compression(std::string_view name) {
  for (auto c : {compression::none, compression::fp16, compression::bf16, compression::int8})
    if (name == to_string(c))
      return c;
  return std::nullopt;
}

layer_work work_at(const layer_spec& l, int micro_batch) {
  const double b = micro_batch;
  // Weights are read once per op whatever the batch; W also reads and writes the gradient
  // accumulators. The embedding touches only the rows it uses, counted per sample.
  const double weights = l.kind == layer_kind::embedding ? 0.0 : double(l.param_bytes);
  layer_work w;
  w.f_flops = l.f_flops * b;
  w.b_flops = l.b_flops * b;
  w.w_flops = l.w_flops * b;
  w.f_bytes = l.f_traffic * b + weights;
  w.b_bytes = l.kind == layer_kind::embedding ? 0.0 : l.b_traffic * b + weights;
  w.w_bytes = l.w_traffic * b + 2 * weights;
  w.act_until_b = l.act_until_b * micro_batch;
  w.act_until_w = l.act_until_w * micro_batch;
  return w;
}

int64_t model_spec::total_params() const {
  int64_t n = 0;
  for (const auto& l : layers)
    n += l.params;
  return n;
}

int64_t model_spec::total_state_bytes() const {
  int64_t n = 0;
  for (const auto& l : layers)
    n += l.state_bytes();
  return n;
}

int64_t model_spec::boundary_bytes_per_sample() const {
  return int64_t(config.context) * config.d_model * fp32;
}

int64_t model_spec::transfer_bytes(int micro_batch, compression c) const {
  const int64_t rows = int64_t(micro_batch) * config.context;
  const int64_t values = rows * config.d_model;
  switch (c) {
  case compression::none:
    return values * fp32;
  case compression::fp16:
  case compression::bf16:
    return values * 2;
  case compression::int8:
    return values + rows * fp32;
  }
  return values * fp32;
}

double recompute_kept_bytes(const model_spec& model, int first_layer, int last_layer, int samples) {
  const double rows = double(samples) * double(model.config.context);
  const double token_ids = rows * 4.0; // i32
  double kept = first_layer == 0 ? token_ids : double(samples) * model.boundary_bytes_per_sample();
  if (last_layer == static_cast<int>(model.layers.size()))
    kept += token_ids; // the targets
  return kept;
}

stage_figures with_recompute(const stage_figures& plain, bool recompute, const model_spec& model,
                             int first_layer, int last_layer, int samples) {
  if (!recompute)
    return plain;
  stage_figures out = plain;
  const double kept = recompute_kept_bytes(model, first_layer, last_layer, samples);
  out.act_until_b = std::min(plain.act_until_b, kept);
  out.rebuilt_bytes = plain.act_until_b - out.act_until_b;
  out.b_s = plain.b_s + plain.f_s;
  return out;
}

model_spec make_model_spec(const model_config& config, std::string name) {
  if (config.n_layer < 1 || config.d_model < 1 || config.n_head < 1 || config.context < 1 ||
      config.vocab < 1)
    throw std::invalid_argument("model sizes must be positive");
  if (config.d_model % config.n_head != 0)
    throw std::invalid_argument("d_model " + std::to_string(config.d_model) +
                                " is not divisible by n_head " + std::to_string(config.n_head));
  model_spec spec;
  spec.name = std::move(name);
  spec.config = config;
  spec.layers.push_back(embedding(config));
  for (int i = 1; i <= config.n_layer; ++i)
    spec.layers.push_back(block(config, i));
  spec.layers.push_back(head(config, config.n_layer + 1));
  return spec;
}

namespace {

struct preset {
  std::string_view name;
  model_config config;
};

constexpr preset presets[] = {
    {"small", {4, 128, 4, 128, 256}},
    {"gpt2-124m", {12, 768, 12, 1024, 50257}},
    {"gpt2-355m", {24, 1024, 16, 1024, 50257}},
    {"gpt2-774m", {36, 1280, 20, 1024, 50257}},
    {"gpt2-1.5b", {48, 1600, 25, 1024, 50257}},
    // A 7B-class decoder with GPT-2 blocks (4C MLP) and a LLaMA-sized vocabulary.
    {"7b", {32, 4096, 32, 2048, 32000}},
};

} // namespace

std::optional<model_config> model_preset(std::string_view name) {
  for (const auto& p : presets)
    if (p.name == name)
      return p.config;
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets)
    names.emplace_back(p.name);
  return names;
}

} // namespace deepcee::runtime
