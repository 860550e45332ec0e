#pragma once

#include "runtime/plan/plan.hpp"

#include <vector>

namespace deepcee::runtime {

/// What the adapter may change of a running plan at a step boundary without moving layers:
/// each pipeline's micro-batch count, each stage's split of a micro-batch among its devices
/// and each stage's send compression. Stages are numbered pipeline by pipeline (the
/// runtime's flat order).
struct plan_allocation {
  std::vector<int> micro_batches;        ///< per pipeline
  std::vector<std::vector<int>> samples; ///< per flat stage, per device
  std::vector<compression> compressions; ///< per flat stage
  friend bool operator==(const plan_allocation&, const plan_allocation&) = default;
};

plan_allocation allocation_of(const plan& p);

/// `base` with `a` in force. An allocation must not change the math of a step. So this
/// throws std::invalid_argument, naming what differs, when `a` does not fit `base`'s
/// pipelines, stages and devices. It also throws when `a` leaves a device of a stage without
/// samples, splits a micro-batch into other than micro_batch_size samples, or changes the
/// global batch.
plan with_allocation(const plan& base, const plan_allocation& a);

/// Whether `to` differs from `from` only in what an allocation holds (same pipelines,
/// stages, layers and devices): what the runtime can apply without moving layers.
bool same_layout(const plan& from, const plan& to);

} // namespace deepcee::runtime
