#include "tools/job_setup.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/base/units.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/io/profile_toml.hpp"
#include "runtime/io/train_config_toml.hpp"
#include "runtime/sim/simulator.hpp"
#include "tools/host_probe.hpp"
#include "tools/profile_run.hpp"

#include <spdlog/spdlog.h>

namespace deepcee::tools {

resolved_job resolve_job(const std::filesystem::path& file, const job_overrides& o,
                         bool always_plan) {
  return resolve_job(runtime::load_job_config(file), o, always_plan);
}

namespace {

/// A plan file whose peak on some device exceeds that device's usable memory is refused,
/// as the planner never prints one: one line naming the file, the device, need and room.
void require_plan_fits(const runtime::cluster& c, const runtime::profile_table& profile,
                       const runtime::plan& p, const std::filesystem::path& file) {
  runtime::sim_options so;
  so.steps = 1;
  const auto worst =
      runtime::worst_shortfall(c, runtime::simulate(c, profile.model(), profile, p, {}, so));
  if (worst.device >= 0)
    runtime::fail_input(file, 0,
                        "the plan does not fit in memory: " + c.devices[size_t(worst.device)].name +
                            " needs " + runtime::format_bytes(worst.need) + " (" +
                            runtime::format_bytes(worst.usable) + " usable)");
}

} // namespace

resolved_job resolve_job(runtime::job_config job, const job_overrides& o, bool always_plan) {
  const auto file = job.source;
  const double time_limit_s = runtime::user_time_limit_s(o.search_s, file);
  if (o.steps)
    job.train.steps = *o.steps;
  if (o.seed)
    job.train.seed = *o.seed;
  if (o.plan)
    job.plan_path = std::filesystem::absolute(*o.plan);
  runtime::validate_job_train(job, "command line");
  runtime::require_fits_host(job.train, probe_host(), runtime::batch_use::spread);
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

  std::optional<runtime::plan> saved;
  if (job.plan_path) {
    saved = runtime::load_plan(*job.plan_path);
    runtime::validate_plan(*saved, static_cast<int>(job.cluster.devices.size()), *job.plan_path);
    require_plan_fits(job.cluster, profile, *saved, *job.plan_path);
  }
  std::optional<runtime::planner_report> report;
  if (always_plan || !saved) {
    runtime::planner_options po;
    po.model_name = job.model_name;
    po.global_batch = job.train.batch;
    po.source = job.cluster_path;
    po.time_limit_s = time_limit_s;
    try {
      report = runtime::plan_training(job.cluster, profile, po);
    } catch (const runtime::input_error& e) {
      if (!saved)
        throw;
      // Beside a plan file the planner only gives the baseline figures: a model that
      // fits no plan of its own does not stop a plan that fits.
      spdlog::warn("no baseline figures: {}", e.what());
    }
  }
  runtime::plan plan = saved ? *saved : report->best;
  if (plan.global_batch() != job.train.batch)
    spdlog::info("global batch {} (the plan's) instead of {}", plan.global_batch(),
                 job.train.batch);
  job.train.batch = plan.global_batch();
  job.train.model = plan.model;
  return {std::move(job), std::move(profile), std::move(report), std::move(plan),
          std::move(corpus)};
}

} // namespace deepcee::tools
