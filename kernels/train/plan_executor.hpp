#pragma once

#include "kernels/train/stage_worker.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/schedule/schedule.hpp"

#include <memory>
#include <vector>

namespace deepcee::kernels {

/// Runs a plan's training step in one thread. Every pipeline's stages execute their
/// schedule's op lists exactly in order; an op waits only for its inputs. Every stage's
/// devices compute their sample ranges. Gradients are summed over every device that holds
/// a layer, and each device steps its optimizer with the global gradient norm.
/// The reference the actor runtime is checked against, and the proof that a plan's math
/// equals single-device training on the same global batch.
class plan_executor {
public:
  plan_executor(backend& be, const runtime::plan& plan, const runtime::train_config& config,
                const runtime::text_corpus& corpus);

  trainer::step_result train_step();
  int steps_done() const { return steps_done_; }

  /// Each pipeline's op lists (greedy schedules use uniform costs here).
  const std::vector<runtime::pipeline_schedule>& schedules() const { return schedules_; }

private:
  struct stage_state {
    std::vector<std::unique_ptr<stage_worker>> devices;
  };

  void run_pipeline(int p, const runtime::token_batch& batch, double& loss_sum);
  /// Runs op on stage s of pipeline p, its inputs there; keeps the tensor it makes.
  void run_op(int p, int s, const runtime::schedule_op& op, const runtime::token_batch& batch,
              double& loss_sum);
  void all_reduce_gradients();
  std::vector<stage_worker*> all_workers();

  backend& be_;
  runtime::plan plan_;
  runtime::train_config config_;
  const runtime::text_corpus& corpus_;
  std::vector<std::vector<stage_state>> stages_; // [pipeline][stage]
  std::vector<runtime::pipeline_schedule> schedules_;
  // Per pipeline, per stage boundary s (between s and s + 1), per micro-batch: the
  // activation sent forward and the gradient sent back, whole micro-batch [b, T, C].
  std::vector<std::vector<std::vector<tensor>>> activations_, gradients_;
  int steps_done_ = 0;
};

} // namespace deepcee::kernels
