#include "runtime/base/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::runtime {

double learning_rate(const optimizer_config& c, int step, int total) {
  if (step <= c.warmup_steps)
    return c.lr * step / std::max(1, c.warmup_steps);
  double span = std::max(1, total - c.warmup_steps);
  double progress = std::min(1.0, (step - c.warmup_steps) / span);
  double min_lr = c.lr * c.min_lr_ratio;
  return min_lr + 0.5 * (c.lr - min_lr) * (1.0 + std::cos(3.141592653589793 * progress));
}

} // namespace deepcee::runtime
