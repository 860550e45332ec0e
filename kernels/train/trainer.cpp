#include "kernels/train/trainer.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/loss_scale.hpp"
#include "runtime/base/lr_schedule.hpp"

#include <cmath>
#include <numeric>

namespace deepcee::kernels {
namespace {

double mean_loss(backend& be, gpt_model& model, const runtime::token_batch& b, int micro) {
  tensor tokens = be.from_host(b.tokens, {b.batch, b.context});
  tensor targets = be.from_host(b.targets, {b.batch, b.context});
  auto losses = be.to_host<float>(model.forward(micro, tokens, &targets));
  return std::accumulate(losses.begin(), losses.end(), 0.0) / static_cast<double>(losses.size());
}

} // namespace

trainer::trainer(backend& be, const runtime::train_config& config,
                 const runtime::text_corpus& corpus)
    : be_(be), config_(config), corpus_(corpus), model_(be, config.model, config.seed),
      optimizer_(be, model_.parameters(), config.optimizer) {
  corpus_.require_context(config.model.context);
}

trainer::step_result trainer::train_step() {
  step_result r;
  r.step = steps_done_ + 1;
  auto b = corpus_.sample_batch(runtime::corpus_split::train, config_.batch, config_.model.context,
                                config_.seed, static_cast<uint64_t>(r.step));
  model_.zero_grad();
  tensor tokens = be_.from_host(b.tokens, {b.batch, b.context});
  tensor targets = be_.from_host(b.targets, {b.batch, b.context});
  const float scale = runtime::loss_scale(b.batch, b.context);
  auto losses = be_.to_host<float>(model_.forward(0, tokens, &targets, scale));
  model_.backward_input(0, {});
  model_.backward_weight(0);
  r.loss =
      runtime::mean_loss(std::accumulate(losses.begin(), losses.end(), 0.0), b.batch, b.context);
  r.grad_norm = std::sqrt(optimizer_.grad_sum_squares());
  r.lr = runtime::learning_rate(config_.optimizer, r.step, config_.steps);
  optimizer_.step(static_cast<float>(r.lr), r.step, r.grad_norm);
  steps_done_ = r.step;
  return r;
}

double trainer::validation_loss() {
  return evaluate(be_, model_, corpus_, config_.batch, config_.eval_batches, config_.seed);
}

void trainer::save(const std::filesystem::path& path) {
  save_checkpoint(path, be_, model_, &optimizer_, {steps_done_, config_.model, config_.seed, 0});
}

void trainer::resume(const std::filesystem::path& path) {
  checkpoint_info info = read_checkpoint_info(path);
  const auto& m = config_.model;
  if (info.model.n_layer != m.n_layer || info.model.d_model != m.d_model ||
      info.model.n_head != m.n_head || info.model.context != m.context ||
      info.model.vocab != m.vocab)
    runtime::fail_input(path, 0, "checkpoint model sizes differ from the config's");
  steps_done_ = load_checkpoint(path, be_, model_, &optimizer_).step;
}

double evaluate(backend& be, gpt_model& model, const runtime::text_corpus& corpus, int batch,
                int batches, uint64_t seed) {
  double sum = 0;
  for (int i = 0; i < batches; ++i) {
    auto b = corpus.validation_batch(static_cast<uint64_t>(i), batch, model.config().context, seed);
    sum += mean_loss(be, model, b, -1);
    model.forget(-1);
  }
  return sum / batches;
}

} // namespace deepcee::kernels
