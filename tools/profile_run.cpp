#include "tools/profile_run.hpp"

#include "runtime/base/units.hpp"
#include "runtime/cluster/profile_fingerprint.hpp"
#include "runtime/io/profile_toml.hpp"
#include "tools/progress.hpp"

#include <algorithm>

namespace deepcee::tools {

std::string build_identity() {
  return runtime::file_digest("/proc/self/exe");
}

runtime::measured_profile measure_this_node(const kernels::profile_request& request,
                                            std::FILE* out) {
  const auto found = kernels::find_local_devices(request);
  for (const auto& line : found.skipped)
    std::fprintf(out, "profile: %s\n", line.c_str());
  const int total = static_cast<int>(found.devices.size() * request.micro_batches.size() * 3);
  progress_bar bar(0, total, out);
  auto p = kernels::measure_devices(
      found, request, build_identity(),
      [&](const kernels::local_device& d, const kernels::layer_timing& t, int done, int) {
        bar.update(done, d.kind + " " + std::string(runtime::to_string(t.kind)) +
                             " b=" + std::to_string(t.micro_batch) + ": F " +
                             runtime::format_duration(t.f_s) + " B " +
                             runtime::format_duration(t.b_s) + " W " +
                             runtime::format_duration(t.w_s) + ", kept " +
                             runtime::format_bytes(double(t.act_until_b)) + " / " +
                             runtime::format_bytes(double(t.act_until_w)));
      });
  bar.finish();
  return p;
}

runtime::measured_profile auto_profile(const runtime::job_config& job, std::FILE* out) {
  kernels::profile_request request;
  request.model = job.train.model;
  request.model_name = job.model_name;
  request.cpu_threads = job.train.threads;
  request.micro_batches.clear();
  for (int b = 1; b <= std::min(job.train.batch, 8); b *= 2)
    request.micro_batches.push_back(b);
  const auto found = kernels::find_local_devices(request);
  const auto fingerprint = runtime::profile_fingerprint(
      kernels::describe(found, request), request.model, runtime::precision::fp32, build_identity());
  const auto dir = job.train.out / "profiles";
  const auto file = dir / (fingerprint + ".toml");
  if (std::filesystem::exists(file)) {
    auto cached = runtime::load_measured_profile(file);
    if (cached.fingerprint == fingerprint) {
      std::fprintf(out, "profile: %s (cached)\n", file.string().c_str());
      return cached;
    }
  }
  std::fprintf(out, "profile: measuring this node's devices for %s (cached as %s)\n",
               job.model_name.c_str(), file.string().c_str());
  auto p = measure_this_node(request, out);
  std::filesystem::create_directories(dir);
  runtime::save_measured_profile(p, file);
  return p;
}

} // namespace deepcee::tools
