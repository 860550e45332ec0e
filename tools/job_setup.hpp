#pragma once

#include "runtime/cluster/profile.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/planner/planner.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace deepcee::tools {

/// Command-line values that replace a job file's.
struct job_overrides {
  std::optional<int> steps;
  std::optional<uint64_t> seed;
  std::optional<std::string> plan;    ///< a plan file instead of the job's
  std::optional<std::string> profile; ///< a measured profile instead of the job's
  /// The planner's time limit in seconds (planner_options::time_limit_s; 0: by cluster size).
  std::optional<double> search_s;
};

/// A job ready to run: its file with the overrides, the profile of its model, the plan and
/// the data. `deepcee run` and `deepcee node` start from the same one.
struct resolved_job {
  runtime::job_config job;
  runtime::profile_table profile;                ///< holds the model spec
  std::optional<runtime::planner_report> report; ///< when the planner ran
  runtime::plan plan;
  std::shared_ptr<const runtime::text_corpus> corpus;
};

/// Loads a job file, applies the overrides and checks that it can run. Takes its plan file
/// or runs the planner, and fits the training settings to the plan. `always_plan` runs the
/// planner beside a plan file too, for its baseline figures.
/// Bad input is an input_error naming the file.
resolved_job resolve_job(const std::filesystem::path& file, const job_overrides& o,
                         bool always_plan);
/// The same for a job file already loaded (`job.source` names it in errors).
resolved_job resolve_job(runtime::job_config job, const job_overrides& o, bool always_plan);

} // namespace deepcee::tools
