#pragma once

#include "kernels/profile/layer_timing.hpp"
#include "runtime/cluster/profile.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::kernels {

/// What `deepcee profile` (and a job with profile = "auto") measures.
struct profile_request {
  runtime::model_config model;
  std::string model_name;
  std::vector<int> micro_batches{1, 2, 4};
  int cpu_threads = 1; ///< OpenBLAS threads of the CPU device measured
  bool cpu = true;
  bool gpus = true;                    ///< every visible CUDA GPU
  std::optional<std::string> gpu_kind; ///< catalogue kind of the GPUs (else from their name)
  timing_options timing;
};

/// One device this node has: its catalogue kind, its identity, and how to reach it.
struct local_device {
  std::string kind;
  std::string identity;
  backend_options backend;
};

/// The devices of `request` this node really has, and one line for each it skips (no GPU
/// visible, a GPU whose catalogue kind is unknown).
struct local_devices {
  std::vector<local_device> devices;
  std::vector<std::string> skipped;
};
local_devices find_local_devices(const profile_request& request);

/// One measurement done: the device, the layer kind, the micro-batch, `done` of `total`.
using profile_progress =
    std::function<void(const local_device&, const layer_timing&, int done, int total)>;

/// The devices' [[device]] rows (kind, identity, micro-batch sizes), without measuring.
std::vector<runtime::measured_device> describe(const local_devices& found,
                                               const profile_request& request);

/// Measures every layer kind at every micro-batch size on each device found, and returns
/// the complete, versioned profile (its fingerprint over the devices, the model and `build`).
/// Two GPUs of the same kind are measured once (the first).
runtime::measured_profile measure_devices(const local_devices& found,
                                          const profile_request& request, std::string_view build,
                                          const profile_progress& progress = {});

/// The CPU's model name ("/proc/cpuinfo"), or "unknown CPU".
std::string cpu_model_name();

/// The catalogue kind a GPU's reported name stands for ("NVIDIA H100 80GB HBM3" ->
/// "H100-SXM"): the longest run of its leading words that the catalogue knows.
std::optional<std::string> catalogue_kind_of(std::string_view gpu_name);

} // namespace deepcee::kernels
