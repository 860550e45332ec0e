#pragma once

#include "actors/job/job_wiring.hpp"
#include "runtime/plan/plan.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

/// `--adapt-to STEP:PLAN` of `deepcee run` and `deepcee node` (the coordinator's node). It
/// makes each kind of decision happen at a known step, for tests and for experiments that
/// compare allocations. The job runs PLAN from step STEP on. The order goes through the
/// adapter, as its policy orders its decisions. PLAN may have the job's own layout with
/// other micro-batch counts, device splits or compressions. Or it may be a re-plan that
/// moves layers: another partition, other stages, pipelines or devices. The model and the
/// global batch stay the same.
namespace deepcee::tools {

struct adapt_order {
  int64_t step = 1;
  runtime::plan plan;
};

/// Reads each "STEP:FILE". Bad input (no step, a step below 1, a plan that changes the global
/// batch of `job_plan`) is an input_error naming the file or the option.
std::vector<adapt_order> read_adapt_orders(const std::vector<std::string>& args,
                                           const runtime::plan& job_plan);

/// Orders every one from the job's adapter; throws std::runtime_error when the job refuses.
void apply_adapt_orders(caf::actor_system& sys, const actors::wired_job& job,
                        const std::vector<adapt_order>& orders, std::chrono::milliseconds wait);

} // namespace deepcee::tools
