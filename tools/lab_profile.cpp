#include "tools/lab_profile.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "tools/interrupt_flag.hpp"
#include "tools/lab_job.hpp"
#include "tools/run_directory.hpp"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace deepcee::tools {

int lab_profile(const lab_context& ctx, const lab_profile_options& o,
                const runtime::token_environment& token_env) {
  const auto state = load_lab_state(lab_state_file(ctx.state_dir, ctx.prefix), ctx.prefix);
  for (const char* own : {"--job", "--name", "--out"})
    if (has_option(o.profile_options, own))
      throw runtime::input_error(std::string("lab profile sets the nodes' ") + own +
                                 " itself: give the profile file with lab profile --profile");
  const auto job = runtime::load_job_config(o.job);
  check_job_fits(job, state, o.job);
  const auto run_dir = make_run_directory(o.out, job.train.out, "lab-profile");
  const auto job_file = derived_job(o.job, job, state, run_dir);
  const auto extra = with_token(o.profile_options, job, token_env, run_dir);
  const auto profile = std::filesystem::absolute(o.profile).string();
  auto nodes = start_in_lab(ctx, state, run_dir, "lab profile", [&](size_t i) {
    std::vector<std::string> args{
        "profile", "--job", job_file.string(), "--name", state.topology.nodes[i].name,
        "--out",   profile};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  });
  // The nodes end on their own: the coordinator's once it has written the file, the
  // others once it has ended. Ctrl-C is passed on once; a node still there 30 s later is
  // killed.
  interrupt_flag interrupted;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  while (reap(nodes)) {
    if (interrupted.raised() && !deadline) {
      signal_all(nodes, SIGINT);
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    }
    if (deadline && std::chrono::steady_clock::now() > *deadline)
      signal_all(nodes, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  bool ok = !interrupted.raised();
  for (const auto& n : nodes) {
    std::printf("node %s: exit %d (log %s)\n", n.name.c_str(), n.status, n.log.string().c_str());
    ok = ok && n.status == 0;
  }
  if (ok)
    std::printf("lab profile: %s (logs in %s)\n", profile.c_str(), run_dir.string().c_str());
  return interrupted.raised() ? 130 : ok ? 0 : 1;
}

} // namespace deepcee::tools
