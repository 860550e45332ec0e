#pragma once

#include "kernels/gpt/gpt_model.hpp"
#include "kernels/optim/adamw.hpp"
#include "kernels/train/checkpoint.hpp"
#include "runtime/base/train_config.hpp"
#include "runtime/data/text_corpus.hpp"

namespace deepcee::kernels {

/// Single-device training: the whole model, the whole batch as one micro-batch, AdamW
/// with warm-up + cosine learning rate. Batches depend only on (seed, step), so a run
/// resumed from a checkpoint continues exactly the loss curve of an uninterrupted one.
class trainer {
public:
  trainer(backend& be, const runtime::train_config& config, const runtime::text_corpus& corpus);

  struct step_result {
    int step = 0; ///< 1-based number of the step just taken
    double loss = 0;
    double grad_norm = 0;
    double lr = 0;
  };

  step_result train_step();
  /// Mean loss over the config's fixed validation batches.
  double validation_loss();
  int steps_done() const { return steps_done_; }

  void save(const std::filesystem::path& path);
  /// Continues from a checkpoint of a model of the same sizes.
  void resume(const std::filesystem::path& path);

  gpt_model& model() { return model_; }

private:
  backend& be_;
  runtime::train_config config_;
  const runtime::text_corpus& corpus_;
  gpt_model model_;
  adamw optimizer_;
  int steps_done_ = 0;
};

/// Mean loss of `model` (whole) over `batches` fixed validation batches of `corpus`.
double evaluate(backend& be, gpt_model& model, const runtime::text_corpus& corpus, int batch,
                int batches, uint64_t seed);

} // namespace deepcee::kernels
