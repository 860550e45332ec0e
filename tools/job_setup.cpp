#include "tools/job_setup.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/io/profile_toml.hpp"
#include "runtime/io/train_config_toml.hpp"
#include "tools/profile_run.hpp"

#include <spdlog/spdlog.h>

namespace deepcee::tools {

resolved_job resolve_job(const std::filesystem::path& file, const job_overrides& o,
                         bool always_plan) {
  return resolve_job(runtime::load_job_config(file), o, always_plan);
}

resolved_job resolve_job(runtime::job_config job, const job_overrides& o, bool always_plan) {
  const auto file = job.source;
  if (o.steps)
    job.train.steps = *o.steps;
  if (o.seed)
    job.train.seed = *o.seed;
  if (o.plan)
    job.plan_path = std::filesystem::absolute(*o.plan);
  runtime::validate_job_train(job, "command line");
  runtime::require_fits_host(job.train, runtime::probe_host(), runtime::batch_use::spread);
  auto corpus = std::make_shared<const runtime::text_corpus>(
      runtime::text_corpus::load(job.train.data.path, job.train.data.val_fraction));
  runtime::measured_profile measured;
  if (o.profile) {
    measured = runtime::load_measured_profile(*o.profile);
    runtime::apply_measured_links(job.cluster, measured); // the job file's: when it was read
  } else if (job.profile_auto)
    measured = auto_profile(job, stderr);
  else if (job.profile_path)
    measured = runtime::load_measured_profile(*job.profile_path);
  runtime::require_profile_covers(measured, job.cluster.devices);
  runtime::profile_table profile(runtime::make_model_spec(job.train.model, job.model_name), {},
                                 std::move(measured));

  std::optional<runtime::planner_report> report;
  if (always_plan || !job.plan_path) {
    runtime::planner_options po;
    po.model_name = job.model_name;
    po.global_batch = job.train.batch;
    po.source = job.cluster_path;
    report = runtime::plan_training(job.cluster, profile, po);
  }
  runtime::plan plan = job.plan_path ? runtime::load_plan(*job.plan_path) : report->best;
  runtime::validate_plan(plan, static_cast<int>(job.cluster.devices.size()),
                         job.plan_path ? *job.plan_path : file);
  if (plan.global_batch() != job.train.batch)
    spdlog::info("global batch {} (the plan's) instead of {}", plan.global_batch(),
                 job.train.batch);
  job.train.batch = plan.global_batch();
  job.train.model = plan.model;
  return {std::move(job), std::move(profile), std::move(report), std::move(plan),
          std::move(corpus)};
}

} // namespace deepcee::tools
