#pragma once

#include "runtime/plan.hpp"
#include "runtime/text_corpus.hpp"
#include "runtime/train_config.hpp"
#include "runtime/virtual_cluster.hpp"

#include <memory>

namespace deepcee::actors {

/// What every actor of a job in this process reads and never writes: the plan, the
/// training settings, the corpus and the emulated cluster. Shared by pointer because it is
/// immutable after start; a node of a multi-process job builds its own from the
/// deployment message.
struct job_context {
  runtime::plan plan;
  runtime::train_config train;
  std::shared_ptr<const runtime::text_corpus> corpus;
  std::shared_ptr<runtime::virtual_cluster> cluster; ///< op and link times, schedules

  int stage_count(int pipeline) const {
    return static_cast<int>(plan.pipelines.at(static_cast<size_t>(pipeline)).stages.size());
  }
  /// Stages of all pipelines numbered pipeline by pipeline (stage_wiring's order).
  int flat_index(int pipeline, int stage) const {
    int n = 0;
    for (int q = 0; q < pipeline; ++q)
      n += stage_count(q);
    return n + stage;
  }
};

} // namespace deepcee::actors
