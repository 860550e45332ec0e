#include "runtime/cluster/device_catalogue.hpp"

#include <cctype>

namespace deepcee::runtime {
namespace {

constexpr double tera = 1e12;
constexpr double giga = 1e9;
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// Figures from the vendors' datasheets and architecture whitepapers; "bf16" is the dense
/// tensor-core rate with fp32 accumulation. Memory sizes marketed as "N GB" are N GiB on
/// the device (an RTX 3090 reports 24576 MiB).
std::vector<device_spec> make_catalogue() {
  return {
      // NVIDIA H100 Tensor Core GPU datasheet, SXM5 column: FP32 67 TFLOPS, BF16 1979
      // TFLOPS with sparsity (989 dense), 80 GB HBM3 at 3.35 TB/s.
      {"H100-SXM", "NVIDIA H100 SXM5 80GB", device_class::datacenter_gpu, 67 * tera, 989 * tera,
       80 * gib, 3350 * giga},
      // NVIDIA A100 datasheet: FP32 19.5 TFLOPS, BF16 312 TFLOPS (dense); 80GB SXM HBM2e
      // at 2039 GB/s, 40GB HBM2 at 1555 GB/s.
      {"A100-80GB", "NVIDIA A100 SXM4 80GB", device_class::datacenter_gpu, 19.5 * tera, 312 * tera,
       80 * gib, 2039 * giga},
      {"A100-40GB", "NVIDIA A100 SXM4 40GB", device_class::datacenter_gpu, 19.5 * tera, 312 * tera,
       40 * gib, 1555 * giga},
      // NVIDIA L4 datasheet: FP32 30.3 TFLOPS, BF16 242 TFLOPS with sparsity (121 dense),
      // 24 GB GDDR6 at 300 GB/s.
      {"L4", "NVIDIA L4", device_class::datacenter_gpu, 30.3 * tera, 121 * tera, 24 * gib,
       300 * giga},
      // NVIDIA A10 datasheet: FP32 31.2 TFLOPS, BF16 125 TFLOPS dense (250 sparse), 24 GB
      // GDDR6 at 600 GB/s.
      {"A10", "NVIDIA A10", device_class::datacenter_gpu, 31.2 * tera, 125 * tera, 24 * gib,
       600 * giga},
      // NVIDIA V100 datasheet, SXM2 32GB: FP32 15.7 TFLOPS, 900 GB/s. Volta has no bf16;
      // bf16 runs at the fp32 rate (its 125 TFLOPS tensor rate is fp16 only).
      {"V100", "NVIDIA V100 SXM2 32GB", device_class::datacenter_gpu, 15.7 * tera, 15.7 * tera,
       32 * gib, 900 * giga},
      // NVIDIA T4 datasheet: FP32 8.1 TFLOPS, 16 GB GDDR6 at 320 GB/s. Turing has no bf16
      // (its 65 TFLOPS tensor rate is fp16 only), so bf16 runs at the fp32 rate.
      {"T4", "NVIDIA T4", device_class::datacenter_gpu, 8.1 * tera, 8.1 * tera, 16 * gib,
       320 * giga},
      // NVIDIA Ada whitepaper (appendix): RTX 4090 FP32 82.6 TFLOPS, BF16 tensor with FP32
      // accumulate 165.2 TFLOPS dense; 24 GB GDDR6X at 1008 GB/s.
      {"RTX4090", "NVIDIA GeForce RTX 4090 (AD102)", device_class::consumer_gpu, 82.6 * tera,
       165.2 * tera, 24 * gib, 1008 * giga},
      // NVIDIA Ampere GA102 whitepaper: RTX 3090 FP32 35.6 TFLOPS, BF16 tensor with FP32
      // accumulate 71 TFLOPS dense; 24 GB GDDR6X at 936 GB/s.
      {"RTX3090", "NVIDIA GeForce RTX 3090 (GA102)", device_class::consumer_gpu, 35.6 * tera,
       71 * tera, 24 * gib, 936 * giga},
      // Jetson AGX Orin 64GB data sheet: 2048-core Ampere GPU at 1.3 GHz = 5.3 TFLOPS fp32,
      // 170 sparse INT8 TOPS on tensor cores (85 sparse fp16/bf16, 42.5 dense); 64 GB
      // LPDDR5 at 204.8 GB/s, shared with the CPU.
      {"Jetson-AGX-Orin", "NVIDIA Jetson AGX Orin 64GB", device_class::embedded_gpu, 5.3 * tera,
       42.5 * tera, 64 * gib, 204.8 * giga},
      // Jetson Xavier NX data sheet: 384-core Volta GPU at 1.1 GHz = 0.845 TFLOPS fp32; no
      // bf16 (Volta), so bf16 runs at the fp32 rate; 8 GB LPDDR4x at 59.7 GB/s.
      {"Jetson-Xavier-NX", "NVIDIA Jetson Xavier NX 8GB", device_class::embedded_gpu, 0.845 * tera,
       0.845 * tera, 8 * gib, 59.7 * giga},
      // Jetson TX2 8GB data sheet: 256-core Pascal GPU at 1.3 GHz = 665.6 GFLOPS fp32 (1.33
      // TFLOPS fp16); no bf16 (Pascal), so bf16 runs at the fp32 rate; 8 GB 128-bit LPDDR4
      // at 59.7 GB/s, shared with the CPU.
      {"Jetson-TX2", "NVIDIA Jetson TX2 8GB", device_class::embedded_gpu, 665.6 * giga,
       665.6 * giga, 8 * gib, 59.7 * giga},
      // Jetson Nano data sheet: 128-core Maxwell GPU at 921.6 MHz = 236 GFLOPS fp32. The
      // datasheet's 472 GFLOPS is fp16. No bf16 (Maxwell), so bf16 runs at the fp32 rate.
      // 4 GB 64-bit LPDDR4 at 25.6 GB/s, shared with the CPU.
      {"Jetson-Nano", "NVIDIA Jetson Nano 4GB", device_class::embedded_gpu, 236 * giga, 236 * giga,
       4 * gib, 25.6 * giga},
      // Raspberry Pi 4 Model B product brief: BCM2711, 4 x Cortex-A72 at 1.5 GHz, 4 GB
      // LPDDR4-3200 on a 32-bit bus (12.8 GB/s). A Cortex-A72 core issues one 4-lane fp32
      // NEON FMA per cycle (two 64-bit FP pipes): 8 FLOP x 1.5 GHz x 4 cores = 48 GFLOP/s
      // fp32 peak for the board; no bf16 units.
      {"Raspberry-Pi-4", "Raspberry Pi 4 Model B 4GB (4 x Cortex-A72)", device_class::cpu,
       48 * giga, 48 * giga, 4 * gib, 12.8 * giga},
      // One core of a modern x86 server with AVX2 + FMA: 2 FMA ports x 8 fp32 lanes x 2 FLOP
      // x ~3 GHz = 96 GFLOP/s peak (OpenBLAS sgemm reaches 70-90% of it); no bf16 units
      // assumed. Memory and bandwidth are one core's share of a typical host: 16 GiB and
      // ~15 GB/s (a single core cannot saturate the socket's DRAM channels).
      {"CPU", "one x86-64 core with AVX2 FMA at ~3 GHz", device_class::cpu, 96 * giga, 96 * giga,
       16 * gib, 15 * giga},
  };
}

/// Lower-case without spaces, '-' and '_': the spelling used for matching.
std::string squash(std::string_view name) {
  std::string out;
  for (char ch : name)
    if (ch != ' ' && ch != '-' && ch != '_')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// Unambiguous alternative names, squashed, and the canonical kind they stand for.
constexpr struct {
  std::string_view alias;
  std::string_view kind;
} aliases[] = {
    {"h100", "H100-SXM"},
    {"h100sxm5", "H100-SXM"},
    {"h10080gb", "H100-SXM"},
    {"a10080g", "A100-80GB"},
    {"a10040g", "A100-40GB"},
    {"v10032gb", "V100"},
    {"geforcertx3090", "RTX3090"},
    {"geforcertx4090", "RTX4090"},
    {"3090", "RTX3090"},
    {"4090", "RTX4090"},
    {"agxorin", "Jetson-AGX-Orin"},
    {"orin", "Jetson-AGX-Orin"},
    {"xaviernx", "Jetson-Xavier-NX"},
    {"tx2", "Jetson-TX2"},
    {"raspberrypi4", "Raspberry-Pi-4"},
    {"rpi4", "Raspberry-Pi-4"},
    {"pi4", "Raspberry-Pi-4"},
    {"x86core", "CPU"},
};

} // namespace

std::string_view to_string(precision p) {
  return p == precision::bf16 ? "bf16" : "fp32";
}

std::string_view to_string(device_class c) {
  switch (c) {
  case device_class::datacenter_gpu:
    return "datacenter GPU";
  case device_class::consumer_gpu:
    return "consumer GPU";
  case device_class::embedded_gpu:
    return "embedded GPU";
  case device_class::cpu:
    return "CPU core";
  }
  return "?";
}

const std::vector<device_spec>& device_catalogue() {
  // Constant data, built once; nothing registers into it at run time.
  static const std::vector<device_spec> catalogue = make_catalogue();
  return catalogue;
}

std::optional<device_spec> find_device_kind(std::string_view name) {
  std::string key = squash(name);
  for (const auto& a : aliases)
    if (key == a.alias) {
      key = squash(a.kind);
      break;
    }
  for (const auto& spec : device_catalogue())
    if (squash(spec.kind) == key)
      return spec;
  return std::nullopt;
}

std::string known_device_kinds() {
  std::string out;
  for (const auto& spec : device_catalogue())
    out += (out.empty() ? "" : ", ") + spec.kind;
  return out;
}

} // namespace deepcee::runtime
