#pragma once

#include <cstdint>
#include <vector>

/// What the coordinator makes of a step once every stage has reported: the loss, the global
/// gradient norm, when the compute ended and each pipeline's stage ends (from which the
/// emulated cluster times the all-reduce). Pure arithmetic over the reports, so that it is
/// tested without actors.
namespace deepcee::runtime {

/// One stage's report of its step, as far as the totals read it.
struct stage_totals {
  int pipeline = 0;
  double end_s = 0;            ///< its last op's end
  double loss_sum = 0;         ///< its tokens' scaled losses (a pipeline's last stage)
  double grad_sum_squares = 0; ///< its reduced gradients' squares (pipeline 0 holds each once)
  int64_t dropped = 0;         ///< malformed messages it dropped so far
};

struct step_totals {
  double loss = 0;          ///< the mean over the global batch's tokens (runtime::mean_loss)
  double grad_norm = 0;     ///< of the whole model's reduced gradients
  double compute_end_s = 0; ///< the latest stage end (0 at the earliest)
  /// Per pipeline: its stages' ends, in the order of `stages`.
  std::vector<std::vector<double>> pipeline_ends;
  int64_t dropped = 0; ///< over the stages
};

/// The totals of a step of `pipelines` pipelines from its stages' reports (in flat order),
/// for a global batch of `global_batch` sequences of `context` tokens. Throws
/// std::out_of_range when a report names a pipeline the step does not have.
step_totals total_of(const std::vector<stage_totals>& stages, int pipelines, int64_t global_batch,
                     int context);

} // namespace deepcee::runtime
