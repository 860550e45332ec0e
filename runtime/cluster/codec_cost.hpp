#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"

/// What compressing the tensors between two stages costs in compute. A compressed boundary
/// is encoded where it leaves and decoded where it arrives, both ways. Stage s's F encodes
/// its activations and stage s + 1's F decodes them. Stage s + 1's B encodes the input
/// gradient and stage s's B decodes it. Each is an elementwise pass over the boundary
/// tensor. The profile may have measured the device kind's codec (profile.hpp's
/// measured_codec), as `deepcee profile` times the runtime's own encode and decode. A pass
/// then costs its measured seconds per byte of the fp32 tensor. Otherwise it is priced by
/// the roofline of the device's memory bandwidth, plus one launch per pass (the device
/// class's launch_s). The simulator, the planner's estimates and the runtime's virtual time (which
/// takes the simulator's op times) all add these same seconds.
namespace deepcee::runtime {

/// Seconds to encode (fp32 to `c`) or decode (`c` to fp32) `samples` samples' boundary
/// tensor on `dev`; 0 for compression::none or no samples. Encoding int8 reads the values
/// twice (each row's absolute maximum, then the scaled values) and writes the bytes and a
/// scale per row; bf16/fp16 read once and write half; decoding reads the encoded bytes and
/// writes fp32.
double encode_s(const device& dev, const model_spec& model, compression c, int samples,
                const profile_table& profile);
double decode_s(const device& dev, const model_spec& model, compression c, int samples,
                const profile_table& profile);

/// The extra F and B seconds of a stage's device that holds `samples` rows. The stage's
/// incoming boundary is encoded as `in`: the previous stage's send_compression, none for a
/// first stage. Its outgoing one is encoded as `out`: its own, none for a last stage.
struct codec_seconds {
  double f = 0, b = 0;
};
codec_seconds stage_codec_s(const device& dev, const model_spec& model, compression in,
                            compression out, int samples, const profile_table& profile);

} // namespace deepcee::runtime
