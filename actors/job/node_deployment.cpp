#include "actors/job/node_deployment.hpp"

#include "actors/job/local_job.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/data/text_corpus.hpp"
#include "runtime/io/train_config_toml.hpp"

namespace deepcee::actors {

job_deployment make_deployment(const std::string& job_name, const runtime::plan& plan,
                               const runtime::train_config& train, run_mode mode) {
  job_deployment d;
  d.job = job_name;
  d.mode = mode.time;
  d.shape_links = mode.shape_links;
  d.plan = plan;
  d.train = train;
  d.train.model = plan.model;
  return d;
}

std::shared_ptr<job_context> accept_deployment(const job_deployment& d,
                                               const runtime::cluster& cluster,
                                               const std::string& node,
                                               const runtime::link_timeline& script) {
  const std::string source = "the deployment of job '" + d.job + "'";
  if (d.node != node)
    runtime::fail_input(source, 0, "it is addressed to node '" + d.node + "', not '" + node + "'");
  runtime::validate_plan(d.plan, static_cast<int>(cluster.devices.size()), source);
  runtime::validate(d.train, source);
  auto corpus = std::make_shared<const runtime::text_corpus>(
      runtime::text_corpus::load(d.train.data.path, d.train.data.val_fraction));
  const runtime::profile_table profile(runtime::make_model_spec(d.plan.model, d.plan.model_name));
  auto job = make_job_context(cluster, profile, d.plan, d.train, std::move(corpus),
                              {d.mode, d.shape_links}, script);
  job->place_on_nodes(cluster);
  return job;
}

std::chrono::steady_clock::time_point aligned_epoch(std::chrono::steady_clock::time_point asked,
                                                    std::chrono::steady_clock::time_point answered,
                                                    double clock_s) {
  const auto half_trip = (answered - asked) / 2;
  return answered - half_trip -
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(clock_s));
}

void align_clock(job_context& job, const job_deployment& d, const std::string& boot_id,
                 std::chrono::steady_clock::time_point asked,
                 std::chrono::steady_clock::time_point answered) {
  if (!boot_id.empty() && boot_id == d.boot_id) {
    job.epoch = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::nanoseconds(d.epoch_ns)));
    job.clock_error_s = 0;
    return;
  }
  job.epoch = aligned_epoch(asked, answered, d.clock_s);
  job.clock_error_s = std::chrono::duration<double>(answered - asked).count() / 2;
}

} // namespace deepcee::actors
