#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// Arithmetic precision of matrix products; activations and gradients stay fp32.
enum class precision { fp32, bf16 };

/// What kind of machine a device is; the roofline picks its efficiency factors by class,
/// because a datacenter GPU reaches a larger share of its peak than a Jetson or a core.
enum class device_class { datacenter_gpu, consumer_gpu, embedded_gpu, cpu };

std::string_view to_string(precision p);
std::string_view to_string(device_class c);

/// Datasheet figures of one device kind (dense, no structured sparsity).
struct device_spec {
  std::string kind;        ///< canonical spelling, e.g. "RTX3090"
  std::string description; ///< e.g. "NVIDIA GeForce RTX 3090 (GA102)"
  device_class cls = device_class::datacenter_gpu;
  double fp32_flops = 0; ///< peak dense fp32, FLOP/s
  double bf16_flops = 0; ///< peak dense bf16 (tensor cores, fp32 accumulate), FLOP/s
  double memory_bytes = 0;
  double mem_bandwidth_Bps = 0; ///< bytes per second

  double peak_flops(precision p) const { return p == precision::bf16 ? bf16_flops : fp32_flops; }
};

/// Every kind the catalogue knows, in a fixed order (fastest datacenter parts first).
const std::vector<device_spec>& device_catalogue();

/// Finds a kind by name. Matching ignores case, spaces, '-' and '_' ("RTX 3090",
/// "rtx3090", "RTX-3090" all match), and a few documented aliases are accepted
/// ("H100" for H100-SXM). Ambiguous names ("A100") match nothing on purpose: the 40 GB
/// and 80 GB parts differ in memory and bandwidth.
std::optional<device_spec> find_device_kind(std::string_view name);

/// "H100-SXM, A100-80GB, ..." for error messages.
std::string known_device_kinds();

} // namespace deepcee::runtime
