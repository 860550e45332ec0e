#include "runtime/step/step_totals.hpp"

#include "runtime/base/loss_scale.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::runtime {

step_totals total_of(const std::vector<stage_totals>& stages, int pipelines, int64_t global_batch,
                     int context) {
  step_totals out;
  out.pipeline_ends.resize(static_cast<size_t>(pipelines));
  double loss_sum = 0, squares = 0;
  for (const auto& s : stages) {
    loss_sum += s.loss_sum;
    squares += s.grad_sum_squares;
    out.pipeline_ends.at(static_cast<size_t>(s.pipeline)).push_back(s.end_s);
    out.compute_end_s = std::max(out.compute_end_s, s.end_s);
    out.dropped += s.dropped;
  }
  out.loss = mean_loss(loss_sum, global_batch, context);
  out.grad_norm = std::sqrt(squares);
  return out;
}

} // namespace deepcee::runtime
