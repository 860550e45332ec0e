#pragma once

#include "messages/tensor_codec.hpp"

#include <cstdint>

/// What the runtime's compression of a stage boundary costs on this host, measured on its
/// own passes: encode_tensor (fp32 values straight into a message of that encoding, which
/// a sending stage runs where an f32 boundary only finishes its draft) and decompress (the
/// received payload widened to fp32, which the receiving stage runs before its op).
/// `deepcee profile` writes the figures into the profile's [[codec]] rows
/// (runtime::measured_codec), which price these passes in the simulator and the planner
/// (runtime/cluster/codec_cost.hpp).
namespace deepcee::messages {

struct codec_timing {
  double encode_s_per_byte = 0; ///< seconds per byte of the fp32 tensor
  double decode_s_per_byte = 0;
};

/// The medians of `repetitions` timed runs (after `warmup` untimed ones) of both passes
/// over a rows x cols tensor of seeded random values. Throws std::invalid_argument for f32
/// (nothing to encode), a shape that is not positive or larger than one message carries,
/// or fewer than one repetition.
codec_timing time_codec(tensor_dtype d, int64_t rows, int64_t cols, int warmup = 2,
                        int repetitions = 9);

} // namespace deepcee::messages
