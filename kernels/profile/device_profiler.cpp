#include "kernels/profile/device_profiler.hpp"

#include "kernels/device/make_backend.hpp"
#include "runtime/cluster/device_catalogue.hpp"
#include "runtime/cluster/profile_fingerprint.hpp"

#include <fstream>
#include <sstream>

namespace deepcee::kernels {

namespace {

/// "cuda:0 (NVIDIA H100 80GB HBM3, fp32 matmul)" -> "NVIDIA H100 80GB HBM3".
std::string gpu_name_of(const std::string& backend_name) {
  const auto open = backend_name.find('(');
  const auto end = backend_name.find(',', open);
  if (open == std::string::npos || end == std::string::npos)
    return backend_name;
  return backend_name.substr(open + 1, end - open - 1);
}

} // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

std::optional<std::string> catalogue_kind_of(std::string_view gpu_name) {
  std::vector<std::string> words;
  std::istringstream in{std::string(gpu_name)};
  for (std::string w; in >> w;)
    if (w != "NVIDIA" && w != "GeForce")
      words.push_back(w);
  for (size_t n = words.size(); n > 0; --n) {
    std::string prefix;
    for (size_t i = 0; i < n; ++i)
      prefix += (i ? " " : "") + words[i];
    if (auto spec = runtime::find_device_kind(prefix))
      return spec->kind;
  }
  return std::nullopt;
}

local_devices find_local_devices(const profile_request& request) {
  local_devices found;
  if (request.cpu) {
    local_device cpu;
    cpu.kind = "CPU";
    cpu.identity =
        cpu_model_name() + ", " + std::to_string(request.cpu_threads) + " OpenBLAS thread(s)";
    cpu.backend.kind = backend_kind::cpu;
    cpu.backend.threads = request.cpu_threads;
    found.devices.push_back(cpu);
  }
  if (!request.gpus)
    return found;
  const int gpus = visible_cuda_devices();
  if (gpus == 0)
    found.skipped.push_back("GPU skipped: " + no_cuda_devices_reason());
  for (int i = 0; i < gpus; ++i) {
    local_device gpu;
    gpu.backend.kind = backend_kind::cuda;
    gpu.backend.device = i;
    const std::string name = gpu_name_of(make_backend(gpu.backend)->name());
    std::optional<std::string> kind = catalogue_kind_of(name);
    if (request.gpu_kind) {
      const auto spec = runtime::find_device_kind(*request.gpu_kind);
      kind = spec ? std::optional<std::string>(spec->kind) : std::nullopt;
    }
    if (!kind) {
      found.skipped.push_back("GPU " + std::to_string(i) + " (" + name +
                              ") skipped: no catalogue kind known for it; name one with "
                              "--gpu-kind");
      continue;
    }
    bool seen = false;
    for (const auto& d : found.devices)
      seen = seen || d.kind == *kind;
    if (seen) {
      found.skipped.push_back("GPU " + std::to_string(i) + " (" + name + "): a " + *kind +
                              " like an earlier one, measured once");
      continue;
    }
    gpu.kind = *kind;
    gpu.identity = name;
    found.devices.push_back(gpu);
  }
  return found;
}

std::vector<runtime::measured_device> describe(const local_devices& found,
                                               const profile_request& request) {
  std::vector<runtime::measured_device> out;
  for (const auto& d : found.devices)
    out.push_back({d.kind, d.identity, request.micro_batches, 0});
  return out;
}

runtime::measured_profile measure_devices(const local_devices& found,
                                          const profile_request& request, std::string_view build,
                                          const profile_progress& progress) {
  runtime::measured_profile p;
  p.format_version = runtime::profile_format_version;
  p.model = request.model_name;
  p.prec = runtime::precision::fp32;
  p.devices = describe(found, request);
  p.fingerprint = runtime::profile_fingerprint(p.devices, request.model, *p.prec, build);
  const int total = static_cast<int>(found.devices.size() * request.micro_batches.size() * 3);
  int done = 0;
  for (const auto& d : found.devices) {
    auto be = make_backend(d.backend);
    for (int b : request.micro_batches)
      for (auto kind : {runtime::layer_kind::embedding, runtime::layer_kind::block,
                        runtime::layer_kind::head}) {
        const layer_timing t = time_layer(*be, request.model, kind, b, request.timing);
        runtime::measured_entry e;
        e.device_kind = d.kind;
        e.layer = kind;
        e.micro_batch = b;
        e.f_s = t.f_s;
        e.b_s = t.b_s;
        e.w_s = t.w_s;
        e.act_until_b = t.act_until_b;
        e.act_until_w = t.act_until_w;
        p.entries.push_back(e);
        if (progress)
          progress(d, t, ++done, total);
      }
    for (auto kind :
         {runtime::layer_kind::embedding, runtime::layer_kind::block, runtime::layer_kind::head})
      p.optimizers.push_back(
          {d.kind, kind, time_optimizer_step(*be, request.model, kind, request.timing), 0});
  }
  return p;
}

} // namespace deepcee::kernels
