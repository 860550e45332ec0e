// deepcee profile: measures this node's devices (the CPU with OpenBLAS, CUDA GPUs where
// present) per layer kind and micro-batch size, and writes a versioned profile file that
// plan, simulate and run read (--profile).
#include "kernels/profile/device_profiler.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/base/units.hpp"
#include "runtime/cluster/profile_fingerprint.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/profile_toml.hpp"
#include "tools/commands.hpp"
#include "tools/host_probe.hpp"
#include "tools/node_network.hpp"
#include "tools/profile_links.hpp"
#include "tools/profile_run.hpp"
#include "tools/progress.hpp"

#include <cstdio>
#include <memory>
#include <optional>

namespace deepcee::tools {
namespace {

struct profile_options {
  std::string model = "gpt2-124m";
  std::optional<std::string> job;  ///< the model of a job file instead
  std::optional<std::string> name; ///< this node of the job: measure its links too
  std::optional<std::string> token_file;
  bool insecure = false; ///< probe the links without the job's token and gates
  std::vector<int> micro_batches{1, 2, 4};
  int threads = 1;
  int repetitions = 9;
  int warmup = 2;
  bool no_gpu = false;
  std::optional<std::string> gpu_kind;
  std::string out;
};

kernels::profile_request request_of(const profile_options& o) {
  kernels::profile_request r;
  if (o.job) {
    const auto job = runtime::load_job_config(*o.job);
    r.model = job.train.model;
    r.model_name = job.model_name;
  } else {
    auto config = runtime::model_preset(o.model);
    if (!config)
      runtime::fail_input("--model", 0, "unknown model preset '" + o.model + "'");
    r.model = *config;
    r.model_name = o.model;
  }
  for (int b : o.micro_batches)
    if (b < 1 || b > 1 << 20)
      runtime::fail_input("--micro-batches", 0, "sizes must be positive");
  if (o.repetitions < 1 || o.warmup < 0)
    runtime::fail_input("--repetitions", 0, "at least one repetition, no negative warm-up");
  if (auto why = runtime::threads_problem(o.threads, probe_host()); !why.empty())
    runtime::fail_input("--threads", 0, why);
  r.micro_batches = o.micro_batches;
  r.cpu_threads = o.threads;
  r.gpus = !o.no_gpu;
  r.gpu_kind = o.gpu_kind;
  r.timing = {o.warmup, o.repetitions};
  return r;
}

int run_profile(const profile_options& o, const runtime::token_environment& token_env) {
  const auto request = request_of(o);
  std::vector<runtime::measured_link> links;
  if (o.name) {
    if (!o.job)
      runtime::fail_input("--name", 0, "names a node of the job that --job gives");
    const auto job = runtime::load_job_config(*o.job);
    const auto me = job.cluster.find_node(*o.name);
    if (!me)
      runtime::fail_input(
          *o.job, 0, "node '" + *o.name + "' is not a node of cluster '" + job.cluster.name + "'");
    links = measure_links(job, *me, node_token(job, *o.name, o.token_file, o.insecure, token_env),
                          stderr);
    if (*me != job.coordinator_node) {
      std::printf("node %s: %zu link(s) measured and reported to the coordinator's node\n",
                  o.name->c_str(), links.size());
      return 0;
    }
  }
  auto p = measure_this_node(request, stderr);
  p.links = std::move(links);
  runtime::save_measured_profile(p, o.out);
  std::printf("profile of %s on %zu device(s) and %zu link(s), fingerprint %s, written to %s\n",
              p.model.c_str(), p.devices.size(), p.links.size(), p.fingerprint.c_str(),
              o.out.c_str());
  return 0;
}

} // namespace

command_action add_profile_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<profile_options>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Measure this node's devices per layer kind and micro-batch size");
  cmd->add_option("--model", o->model, "Model preset")->capture_default_str();
  cmd->add_option("--job", o->job, "Take the model of this job file instead");
  cmd->add_option("--name", o->name,
                  "This node of the job (--job): also measure the links between the job's "
                  "nodes (run it on every node; the coordinator's node writes the file)");
  cmd->add_option("--token-file", o->token_file,
                  "With --name: file holding the job's token (else the job's [security] "
                  "token_file, DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN)");
  cmd->add_flag("--insecure", o->insecure,
                "With --name: probe the links without the token, straight to CAF");
  cmd->add_option("--micro-batches", o->micro_batches, "Micro-batch sizes to measure")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "OpenBLAS threads of the CPU device")
      ->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions, "Timed runs per op (the median is kept)")
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed runs first")->capture_default_str();
  cmd->add_flag("--no-gpu", o->no_gpu, "Measure the CPU only");
  cmd->add_option("--gpu-kind", o->gpu_kind, "Catalogue kind of the GPUs (else from their name)");
  cmd->add_option("--out", o->out, "Profile file to write (TOML)")->required();
  return [o, token_env = env.token] { return run_profile(*o, token_env); };
}

} // namespace deepcee::tools
