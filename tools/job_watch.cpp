#include "tools/job_watch.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/sim/simulator.hpp"
#include "tools/plan_print.hpp"
#include "tools/watch_credential.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace deepcee::tools {

namespace {

/// Whether `host` is this machine's loopback, which no other host reaches.
bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// The groups as `deepcee run` prints them, one line each.
std::vector<std::string> group_lines(const runtime::cluster& c, const runtime::grouping& g) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  if (!out)
    return {};
  print_groups(out, c, g);
  std::fclose(out);
  std::vector<std::string> lines;
  std::istringstream in(std::string(buffer, size));
  std::free(buffer);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(line);
  return lines;
}

runtime::step_facts facts_of(const actors::step_result& r, double real_s, bool dry,
                             const std::vector<runtime::link_report>& links) {
  runtime::step_facts f;
  f.step = static_cast<int>(r.step);
  if (!dry)
    f.loss = r.loss;
  f.start_s = r.start_s;
  f.end_s = r.end_s;
  f.compute_end_s = r.compute_end_s;
  f.real_s = real_s;
  for (size_t k = 0; k < r.ops.size() && k < r.op_stage.size(); ++k) {
    const auto stage = static_cast<size_t>(std::max(r.op_stage[k], 0));
    if (f.stage_ops.size() <= stage)
      f.stage_ops.resize(stage + 1);
    const auto& op = r.ops[k];
    f.stage_ops[stage].push_back(
        {std::string(1, runtime::op_letter(static_cast<runtime::op_kind>(op.kind))), op.micro_batch,
         op.start, op.end});
  }
  f.links = links;
  f.dropped_messages = r.dropped;
  return f;
}

} // namespace

runtime::snapshot_builder
make_snapshot_builder(const runtime::job_config& job, const runtime::profile_table& profile,
                      const runtime::plan& plan,
                      const std::optional<runtime::planner_report>& report) {
  runtime::snapshot_header header{
      job.name, job.model_name, std::string(runtime::to_string(job.time)),
      report ? group_lines(job.cluster, report->groups) : std::vector<std::string>{},
      job.train.steps};
  // Each device's memory need under a plan: the simulator's peak for its share.
  auto estimate = [cluster = job.cluster, profile](const runtime::plan& p) {
    runtime::sim_options so;
    so.steps = 1;
    return runtime::simulate(cluster, profile.model(), profile, p, {}, so);
  };
  return runtime::snapshot_builder(std::move(header), plan, job.cluster, std::move(estimate));
}

std::optional<inspect_address> inspect_address_of(const std::optional<std::string>& flag,
                                                  const runtime::job_config& job) {
  if (flag)
    return parse_inspect_address(*flag, "--inspect");
  if (!job.inspect_addr.empty())
    return parse_inspect_address(job.inspect_addr,
                                 runtime::located(job.source, job.inspect_line, "[inspect] addr"));
  return inspect_address{};
}

job_watch::job_watch(runtime::snapshot_builder builder, const std::optional<inspect_address>& at,
                     const std::string& job_token, std::vector<std::string> host_names,
                     std::shared_ptr<const transport::tls_context> https)
    : builder_(std::move(builder)) {
  if (!at)
    return;
  const bool local = loopback(at->host);
  const bool fresh = job_token.empty() && !local;
  const auto credential = fresh               ? random_watch_credential()
                          : job_token.empty() ? std::string()
                                              : watch_credential(job_token);
  const bool tls = https != nullptr;
  server_ = std::make_unique<inspect_server>(
      board_,
      inspect_settings{.credential = credential,
                       .host_names = std::move(host_names),
                       .log = [](const std::string& line) { spdlog::warn("inspect: {}", line); },
                       .tls = std::move(https)});
  auto bound = *at;
  bound.port = server_->start(*at);
  std::printf("inspect: %s://%s%s\n", tls ? "https" : "http", bound.text().c_str(),
              fresh ? ("/#token=" + credential).c_str() : "");
  std::fflush(stdout);
  if (!local && !tls)
    spdlog::warn("inspect: plain HTTP on {}: the watch credential crosses the network "
                 "unencrypted (it can read the job, never steer it)",
                 bound.text());
}

void job_watch::started(int step) {
  if (on())
    board_.publish(builder_.initial(step));
}

void job_watch::stepped(const actors::step_result& r, double real_s, const runtime::plan& ran,
                        const std::vector<runtime::link_report>& links) {
  if (!on())
    return;
  builder_.plan_in_force(ran);
  board_.publish(
      builder_.after_step(facts_of(r, real_s, builder_.latest().time_mode == "dry", links)));
}

void job_watch::validated(int step, double loss) {
  if (!on())
    return;
  builder_.validated(step, loss);
  board_.publish(builder_.latest());
}

void job_watch::decided(runtime::adapter_decision d) {
  if (on())
    builder_.decided(std::move(d));
}

void job_watch::injected(int step, const runtime::described_event& e) {
  if (on())
    builder_.injected({step, e.at_s, e.text});
}

} // namespace deepcee::tools
