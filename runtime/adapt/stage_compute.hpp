#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/plan/plan.hpp"

#include <cstdint>
#include <vector>

/// Each stage's compute in a step, from its ops' spans: what the adapter's monitor reads
/// (runtime::step_adapter::end_step) where op times are the emulated cluster's.
namespace deepcee::runtime {

/// An op of a step as a stage recorded it.
struct op_span {
  int32_t stage = 0; ///< flat index: pipeline by pipeline, stage by stage
  double start_s = 0;
  double end_s = 0;
};

/// Per pipeline, per stage of `p` on `c`: the summed compute of its ops. An op's span holds
/// its devices' compute and, for a device on another node than its stage, its work's round
/// trip (apart_round_trip_s), which is not compute (runtime::stage_compute_s). Throws
/// std::out_of_range for an op of a stage `p` does not have.
std::vector<std::vector<double>> stage_compute(const cluster& c, const plan& p,
                                               const std::vector<op_span>& ops);

} // namespace deepcee::runtime
