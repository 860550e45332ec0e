#pragma once

// The plan and model the adapter tests share: four two-stage pipelines on four_pipes_cluster.

#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/sim/simulator.hpp"
#include "tests/support/clusters.hpp"

#include <ostream>

namespace deepcee::runtime {

inline std::ostream& boost_test_print_type(std::ostream& os, decision_kind k) {
  return os << to_string(k);
}

} // namespace deepcee::runtime

namespace deepcee::test {

inline runtime::model_config adapt_model() {
  return runtime::model_config{6, 256, 4, 128, 512};
}

/// Pipeline p runs on node p: stage 0 (embedding and blocks 1-3) on device 2p, stage 1 (the
/// rest) on device 2p + 1; 8 micro-batches of 4 samples each, global batch 128.
inline runtime::plan four_pipes_plan(int micro_batches = 8) {
  runtime::plan p;
  p.strategy = "test";
  p.model_name = "custom";
  p.model = adapt_model();
  p.micro_batch_size = 4;
  for (int k = 0; k < 4; ++k) {
    runtime::pipeline_plan pipe;
    pipe.micro_batches = micro_batches;
    pipe.schedule = runtime::schedule_kind::one_f_one_b;
    pipe.stages.push_back({{2 * k}, {4}, 0, 4, runtime::compression::none});
    pipe.stages.push_back({{2 * k + 1}, {4}, 4, 8, runtime::compression::none});
    p.pipelines.push_back(pipe);
  }
  return p;
}

/// four_pipes_plan on four_pipes_cluster with its model and profile, and its step time.
struct four_pipes_job {
  runtime::cluster c = four_pipes_cluster();
  runtime::model_spec model = runtime::make_model_spec(adapt_model());
  runtime::profile_table profile{model};
  runtime::plan p = four_pipes_plan();
  double step_s = runtime::simulate(c, model, profile, p).step_time_s;
};

} // namespace deepcee::test
