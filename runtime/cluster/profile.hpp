#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/device_catalogue.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// What one layer costs on one device for one micro-batch.
struct layer_cost {
  double f_s = 0;          ///< forward, seconds
  double b_s = 0;          ///< input gradient, seconds
  double w_s = 0;          ///< weight gradient, seconds
  int64_t act_until_b = 0; ///< bytes kept from F until B
  int64_t act_until_w = 0; ///< bytes kept from B until W
  int64_t state_bytes = 0; ///< weights + gradients + AdamW moments (independent of b)
  bool measured = false;   ///< from a measured profile (exact or calibrated)
};

/// Roofline parameters of one device class. A matmul reaches `matmul_efficiency` of peak
/// only when it is large. The share is scaled by N / (N + tokens_half) for N tokens and by
/// C / (C + width_half) for width C. So small micro-batches and narrow models on big GPUs
/// run far below peak, as they do in practice.
struct roofline_factors {
  double matmul_efficiency = 0.6;
  double tokens_half = 256;
  double width_half = 128;
  double launch_s = 5e-6; ///< fixed cost per kernel launch (per op on a CPU)
};

/// Why the default efficiencies: cuBLAS on datacenter parts sustains 60-75% of peak on
/// large GEMMs. Consumer cards clock down under sustained load, and their fp32 peak counts
/// dual-issue FMA, so 50%. Jetsons share memory with the CPU and throttle: 40%. OpenBLAS
/// sgemm on one AVX2 core reaches 70-90% of peak once the matrices exceed a few dozen rows.
struct estimate_options {
  precision prec = precision::fp32;
  roofline_factors datacenter{0.6, 256, 128, 5e-6};
  roofline_factors consumer{0.5, 256, 128, 5e-6};
  roofline_factors embedded{0.4, 128, 64, 10e-6};
  roofline_factors cpu{0.7, 4, 16, 1e-6};

  const roofline_factors& factors(device_class c) const;
};

/// time = max(flops / (peak * efficiency), bytes / mem_bandwidth) + kernels * launch_s.
layer_cost estimate_cost(const device_spec& dev, const layer_spec& layer, int micro_batch,
                         const estimate_options& options);

/// One measured row: a device kind, a layer kind and a micro-batch size.
struct measured_entry {
  std::string device_kind; ///< canonical catalogue kind
  layer_kind layer = layer_kind::block;
  int micro_batch = 1;
  double f_s = 0, b_s = 0, w_s = 0;
  std::optional<int64_t> act_until_b;
  std::optional<int64_t> act_until_w;
  int64_t line = 0;
};

/// The format version `deepcee profile` writes and this build reads.
constexpr int profile_format_version = 1;

/// A device a versioned profile was measured on.
struct measured_device {
  std::string kind;               ///< canonical catalogue kind
  std::string identity;           ///< CPU model or GPU name, threads, BLAS
  std::vector<int> micro_batches; ///< every layer kind was measured at each
  int64_t line = 0;
};

/// One directed link between two nodes of a job: time = latency + bytes / bandwidth.
struct measured_link {
  std::string from, to; ///< node names
  double latency_s = 0;
  double bandwidth_Bps = 0;
  int64_t line = 0;
};

/// What compressing the boundary tensor costs on a device, measured by `deepcee profile` on
/// the runtime's own passes (messages::encode_tensor from fp32 into a message of that
/// encoding, messages::decompress back to fp32): seconds per byte of the fp32 tensor.
struct measured_codec {
  std::string device_kind; ///< canonical catalogue kind
  compression comp = compression::int8;
  double encode_s_per_byte = 0;
  double decode_s_per_byte = 0;
  int64_t line = 0;
};

/// What one layer's share of the optimizer step costs on a device, independent of the
/// micro-batch. `deepcee profile` measures it on the runtime's own calls (kernels::adamw).
/// They are the squares of its gradients for the clipping norm, the AdamW update, and then
/// zeroing its gradients.
struct measured_optimizer {
  std::string device_kind; ///< canonical catalogue kind
  layer_kind layer = layer_kind::block;
  double step_s = 0;
  int64_t line = 0;
};

/// A measured profile file (TOML):
///
///     model = "gpt2-124m"     # optional: must match the planned model when given
///     precision = "fp32"      # optional, fp32 | bf16; must match the estimate options
///     [[entry]]
///     device = "RTX3090"      # a catalogue kind
///     layer = "block"         # embedding | block | head
///     micro_batch = 4
///     f = 0.0123              # seconds (numbers) or "12.3ms"
///     b = 0.0131
///     w = 0.0119
///     act_until_b = 1.2e8     # optional, bytes
///     act_until_w = 9.0e7     # optional, bytes
///
/// A file that `deepcee profile` writes is versioned (`format_version`) and complete. It
/// also names its fingerprint and the devices it was measured on ([[device]]). It says how
/// many entries and links it has, so a truncated file is caught. It has every layer kind at
/// every micro-batch size of each device, and the links between the nodes ([[link]]). See
/// configs/profiles/cpu-small-measured.toml. A file without `format_version` is a
/// hand-written partial profile, read as above.
///
/// Either kind may give the measured cost of compressed transfers, per device kind and
/// encoding. codec_cost.hpp uses it instead of the datasheet roofline. A versioned file that
/// has them declares their count (`codecs = 3`), so truncation is caught. A file without
/// codec rows needs no count. Its rows:
///
///     [[codec]]
///     device = "CPU"
///     compression = "int8"   # fp16 | bf16 | int8
///     encode = 1.1e-10       # seconds per byte of the fp32 tensor
///     decode = 4.0e-11
///
/// Optimizer steps come the same way (`optimizers = 3`). Each gives the step of one layer
/// kind on one device kind. The simulator's "Optimizer" (simulator.hpp) uses them instead
/// of the memory-bandwidth estimate. Their rows:
///
///     [[optimizer]]
///     device = "CPU"
///     layer = "block"        # embedding | block | head
///     step = 0.0021          # seconds
struct measured_profile {
  std::filesystem::path source;
  int format_version = 0; ///< 0: hand-written, unversioned
  std::string fingerprint;
  std::vector<measured_device> devices;
  std::vector<measured_link> links;
  std::string model;
  int64_t model_line = 0;
  std::optional<precision> prec;
  int64_t precision_line = 0;
  std::vector<measured_entry> entries;
  std::vector<measured_codec> codecs;
  std::vector<measured_optimizer> optimizers;
};

/// Per-layer costs of one model on any device. They are estimated by the roofline unless
/// the measured profile has the (kind, layer kind) pair. An exact micro-batch match is taken
/// as measured. Other micro-batch sizes scale the estimate by measured / estimated at the
/// nearest measured size (the smaller one on a tie). That calibrates the roofline without
/// trusting it blindly.
class profile_table {
public:
  /// Throws input_error (at the measured file's line) when the measured profile names a
  /// different model or precision.
  explicit profile_table(model_spec model, estimate_options options = {},
                         measured_profile measured = {});

  /// With the catalogue's figures for `kind`; throws std::invalid_argument for an
  /// unknown kind.
  layer_cost cost(std::string_view kind, int layer, int micro_batch) const;

  /// With the device's own figures (a cluster may override the catalogue).
  layer_cost cost(const device& dev, int layer, int micro_batch) const;

  const model_spec& model() const { return model_; }
  const estimate_options& options() const { return options_; }
  const measured_profile& measured() const { return measured_; }
  /// The measured codec cost of `comp` on device kind `kind` (catalogue kind, matched as the
  /// entries are), or null when the profile has none.
  const measured_codec* codec(std::string_view kind, compression comp) const;
  /// The optimizer step of layers [first, last) on `dev`. It is the measured step of each
  /// layer's kind when the profile has it for the device's kind. Otherwise it is AdamW's
  /// memory traffic at the device's memory bandwidth. AdamW reads the weights, gradients and
  /// both moments, and writes the weights and moments.
  double optimizer_s(const device& dev, int first, int last) const;

private:
  layer_cost cost_with(const device_spec& figures, int layer, int micro_batch) const;

  model_spec model_;
  estimate_options options_;
  measured_profile measured_;
};

/// Bad input when a versioned profile measured none of the device kinds of `devices` (it
/// was measured on another machine): one line naming the file and both kinds.
void require_profile_covers(const measured_profile& profile, const std::vector<device>& devices);

/// The measured links of `profile` as directed node-to-node overrides of `c`'s links (they
/// win over the level defaults and over broader overrides). Bad input when a link names a
/// node that `c` does not have.
void apply_measured_links(cluster& c, const measured_profile& profile);

/// A device's figures as a catalogue entry (its own overrides included).
device_spec figures_of(const device& dev);

} // namespace deepcee::runtime
