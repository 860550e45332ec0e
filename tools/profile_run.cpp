#include "tools/profile_run.hpp"

#include "messages/codec_timing.hpp"
#include "runtime/base/units.hpp"
#include "runtime/cluster/profile_fingerprint.hpp"
#include "runtime/io/profile_toml.hpp"
#include "tools/progress.hpp"

#include <algorithm>
#include <utility>

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
  add_codec_costs(p, request);
  return p;
}

void add_codec_costs(runtime::measured_profile& p, const kernels::profile_request& request) {
  // A stage boundary [b, T, C] at the largest micro-batch measured: one row per token.
  const int b = *std::max_element(request.micro_batches.begin(), request.micro_batches.end());
  const int64_t rows = int64_t{b} * request.model.context, cols = request.model.d_model;
  const std::pair<runtime::compression, messages::tensor_dtype> kinds[] = {
      {runtime::compression::fp16, messages::tensor_dtype::f16},
      {runtime::compression::bf16, messages::tensor_dtype::bf16},
      {runtime::compression::int8, messages::tensor_dtype::int8}};
  for (const auto& [comp, dtype] : kinds) {
    const auto t = messages::time_codec(dtype, rows, cols);
    // The runtime encodes and decodes on the host for every device (the devices write fp32
    // into the message's payload), so each device kind of this node gets the host's figure.
    for (const auto& d : p.devices)
      p.codecs.push_back({d.kind, comp, t.encode_s_per_byte, t.decode_s_per_byte, 0});
  }
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
