#pragma once

#include "kernels/profile/device_profiler.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/job_config.hpp"

#include <cstdio>
#include <filesystem>

namespace deepcee::tools {

/// The running executable's digest: a profile measured by another build is measured again.
std::string build_identity();

/// Measures this node's devices as `request` says, with progress on `out` (redrawn on a
/// terminal, plain lines otherwise), one line for each device skipped; then the host's
/// codec passes (add_codec_costs).
runtime::measured_profile measure_this_node(const kernels::profile_request& request,
                                            std::FILE* out);

/// Times the runtime's fp16, bf16 and int8 encode and decode passes on this host
/// (messages::time_codec, over the model's boundary tensor at the largest micro-batch of
/// `request`) and adds them to `p` as [[codec]] rows for each of its devices.
void add_codec_costs(runtime::measured_profile& p, const kernels::profile_request& request);

/// The profile a job with profile = "auto" runs with. It is the cached file
/// `<train.out>/profiles/<fingerprint>.toml` when there is one for this node's devices, the
/// model and this build. Otherwise it is measured now and cached there. The measurement uses
/// its CPU device with [train] threads, at the micro-batch sizes 1, 2, 4 and 8 up to the batch.
runtime::measured_profile auto_profile(const runtime::job_config& job, std::FILE* out);

} // namespace deepcee::tools
