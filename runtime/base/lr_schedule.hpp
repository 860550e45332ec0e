#pragma once

#include "runtime/base/train_config.hpp"

namespace deepcee::runtime {

/// Learning rate at `step` (1-based) of `total`: linear warm-up from lr/warmup to lr over
/// the warm-up steps, then cosine decay to lr * min_lr_ratio at the last step.
double learning_rate(const optimizer_config& c, int step, int total);

} // namespace deepcee::runtime
