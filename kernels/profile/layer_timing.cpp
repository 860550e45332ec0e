#include "kernels/profile/layer_timing.hpp"

#include "kernels/gpt/embedding_layer.hpp"
#include "kernels/gpt/head_layer.hpp"
#include "kernels/gpt/transformer_block.hpp"
#include "runtime/base/statistics.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

namespace deepcee::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

std::unique_ptr<layer> make_layer(backend& be, const runtime::model_config& m,
                                  runtime::layer_kind kind) {
  constexpr uint64_t seed = 1;
  switch (kind) {
  case runtime::layer_kind::embedding:
    return std::make_unique<embedding_layer>(be, m.vocab, m.context, m.d_model, seed);
  case runtime::layer_kind::block:
    return std::make_unique<transformer_block>(be, 0, m.d_model, m.n_head, m.n_layer, seed);
  case runtime::layer_kind::head:
    return std::make_unique<head_layer>(be, m.vocab, m.d_model, seed);
  }
  throw std::invalid_argument("unknown layer kind");
}

tensor random_tokens(backend& be, std::mt19937& rng, int b, int t, int vocab) {
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> v(static_cast<size_t>(b) * static_cast<size_t>(t));
  for (auto& x : v)
    x = pick(rng);
  return be.from_host(v, {b, t});
}

tensor random_values(backend& be, std::mt19937& rng, int b, int t, int c) {
  std::normal_distribution<float> pick(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(b) * static_cast<size_t>(t) * static_cast<size_t>(c));
  for (auto& x : v)
    x = pick(rng);
  return be.from_host(v, {b, t, c});
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

} // namespace

layer_timing time_layer(backend& be, const runtime::model_config& model, runtime::layer_kind kind,
                        int micro_batch, const timing_options& options) {
  if (micro_batch < 1 || options.repetitions < 1 || options.warmup < 0)
    throw std::invalid_argument("time_layer: micro-batch and repetitions must be positive");
  const int b = micro_batch, t = model.context, c = model.d_model;
  std::mt19937 rng(42);
  auto layer = make_layer(be, model, kind);
  auto* head = dynamic_cast<head_layer*>(layer.get());
  const tensor input = kind == runtime::layer_kind::embedding
                           ? random_tokens(be, rng, b, t, model.vocab)
                           : random_values(be, rng, b, t, c);
  const tensor targets = random_tokens(be, rng, b, t, model.vocab);
  // The gradient arriving from the next stage (the head starts its own).
  const tensor dy = random_values(be, rng, b, t, c);

  layer_timing out;
  out.kind = kind;
  out.micro_batch = b;
  std::vector<double> f, bw, w;
  for (int run = 0; run < options.warmup + options.repetitions; ++run) {
    if (head)
      head->set_targets(run, targets, 1.0f / static_cast<float>(b * t));
    be.synchronize();
    auto start = clock_type::now();
    tensor y = layer->forward(run, input);
    be.synchronize();
    const double f_s = seconds_since(start);
    out.act_until_b = static_cast<int64_t>(layer->saved_bytes());
    start = clock_type::now();
    tensor dx = layer->backward_input(run, dy);
    be.synchronize();
    const double b_s = seconds_since(start);
    out.act_until_w = static_cast<int64_t>(layer->saved_bytes());
    start = clock_type::now();
    layer->backward_weight(run);
    be.synchronize();
    const double w_s = seconds_since(start);
    if (run < options.warmup)
      continue;
    f.push_back(f_s);
    bw.push_back(b_s);
    w.push_back(w_s);
  }
  out.f_s = runtime::median(f);
  out.b_s = runtime::median(bw);
  out.w_s = runtime::median(w);
  return out;
}

} // namespace deepcee::kernels
