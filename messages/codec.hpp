#pragma once

#include "messages/result.hpp"
#include "messages/types.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

/// Cap'n Proto codecs for the messages of types.hpp. `encode` never fails on a valid value
/// (a tensor whose payload disagrees with its header is the caller's bug and throws
/// std::invalid_argument); every `decode_*` validates and returns an error value for
/// anything malformed (truncated, garbage, another message kind, trailing bytes, unknown
/// enum values, negative indices, non-finite times, a payload that disagrees with its
/// shape and dtype). Decoders never throw and never read outside the given bytes.
///
/// Byte order: little-endian only (Cap'n Proto's wire order; payload views rely on it).
namespace deepcee::messages {

std::vector<uint8_t> encode(const job_deployment& m);
std::vector<uint8_t> encode(const deployment_request& m);
std::vector<uint8_t> encode(const step_start& m);
std::vector<uint8_t> encode(const link_sample& m);
std::vector<uint8_t> encode(const step_stats& m);
std::vector<uint8_t> encode(const rebalance& m);
std::vector<uint8_t> encode(const heartbeat& m);
std::vector<uint8_t> encode(const error_report& m);
std::vector<uint8_t> encode(const optimize_order& m);
std::vector<uint8_t> encode(const stage_report& m);
std::vector<uint8_t> encode(const node_join& m);
std::vector<uint8_t> encode(const pipe_request& m);
std::vector<uint8_t> encode(const send_horizon& m);
std::vector<uint8_t> encode(const pipe_arrival& m);
std::vector<uint8_t> encode(const script_update& m);
/// Throws std::invalid_argument naming the parameter when one of its tensors is larger
/// than max_payload_bytes (Cap'n Proto's limit on a Data field) or disagrees with its shape.
std::vector<uint8_t> encode(const stage_snapshot& m);

/// A Tensor message of kind gradientShare (f32): the bytes of encode_tensor.
std::vector<uint8_t> encode(const gradient_share& m);

/// A stage's device on another node (actors/remote_device.hpp). Each throws
/// std::invalid_argument, naming the message and the field, when a Float32 field holds more
/// than max_payload_bytes.
std::vector<uint8_t> encode(const device_rows& m);
std::vector<uint8_t> encode(const device_output& m);
std::vector<uint8_t> encode(const ring_chunk& m);
std::vector<uint8_t> encode(const gradient_values& m);

/// Largest payload of one tensor message (Cap'n Proto's limit on a Data field); a larger
/// tensor is sent in slices of samples (tensor_header::first_sample).
constexpr int64_t max_payload_bytes = (int64_t{1} << 29) - 1;
/// The most float values one such payload holds.
constexpr size_t max_payload_floats = static_cast<size_t>(max_payload_bytes) / sizeof(float);

/// Largest stage_snapshot: BASP (CAF's protocol between nodes) frames a message with a
/// 32-bit size, and the CAF wrapping around the Cap'n Proto bytes needs a little of it.
constexpr int64_t max_snapshot_bytes = (int64_t{1} << 32) - (int64_t{1} << 20);

/// Copies `m.payload` (already encoded as m.header.dtype says) into the message: the one
/// copy of the send path.
std::vector<uint8_t> encode(const tensor_message& m);
/// Compresses fp32 `values` (header.shape) straight into the message as header.dtype
/// says: one pass, no intermediate buffer.
std::vector<uint8_t> encode_tensor(const tensor_header& header, std::span<const float> values);

/// An f32 tensor message whose producers write its values straight into its payload, later
/// and elsewhere (the devices of a stage, each its own rows, while the stage goes on): the
/// send path's one serialization is then the producers' own writes, with no staging buffer.
/// `payload()` (header.rows() * header.cols() floats) stays valid until `finish`, which
/// sets the send and arrival times and hands over the bytes, equal to encode_tensor's.
/// Other dtypes throw std::invalid_argument (they need encode_tensor's conversion pass).
class tensor_draft {
public:
  explicit tensor_draft(const tensor_header& header);
  ~tensor_draft();
  tensor_draft(const tensor_draft&) = delete;
  tensor_draft& operator=(const tensor_draft&) = delete;

  std::span<float> payload() const { return payload_; }
  std::vector<uint8_t> finish(double send_time, double arrival_time, int64_t deliver_at_ns = 0);

private:
  struct parts;
  std::unique_ptr<parts> parts_;
  std::span<float> payload_;
};

/// A tensor message without its payload: dry mode, where the shape says what a real one
/// would carry and nothing is computed.
std::vector<uint8_t> encode_tensor_header(const tensor_header& header);

/// The kind of an encoded message, after the same framing checks as the decoders.
result<message_kind> peek_kind(std::span<const uint8_t> bytes);

/// decode_<type> for every entry of message_list.hpp (decode_job_deployment,
/// decode_heartbeat, ...). decode_gradient_share reads a Tensor message that is a gradient
/// share, and refuses a valid activation or gradient.
#define DEEPCEE_DECODER(type, kind, schema)                                                        \
  result<type> decode_##type(std::span<const uint8_t> bytes);
DEEPCEE_WIRE_MESSAGES(DEEPCEE_DECODER)
#undef DEEPCEE_DECODER

/// The decoder of `T` by its type, for callers generic over the message (the actors' CAF
/// `inspect`, actors/protocol/wire_format.hpp): one per entry of message_list.hpp.
template <class T>
result<T> decode(std::span<const uint8_t> bytes);

#define DEEPCEE_DECODE_BY_TYPE(type, kind, schema)                                                 \
  template <>                                                                                      \
  inline result<type> decode<type>(std::span<const uint8_t> bytes) {                               \
    return decode_##type(bytes);                                                                   \
  }
DEEPCEE_WIRE_MESSAGES(DEEPCEE_DECODE_BY_TYPE)
#undef DEEPCEE_DECODE_BY_TYPE

/// Copies the bytes once into an aligned buffer that the result's payload view points into.
result<tensor_message> decode_tensor(std::span<const uint8_t> bytes);
/// Takes the received vector over: no copy at all when its storage is word aligned.
result<tensor_message> decode_tensor(std::vector<uint8_t>&& bytes);

/// A message of encode_tensor_header: the header checked as decode_tensor checks it, and
/// a payload, which a header-only tensor must not have, refused.
result<tensor_message> decode_tensor_header(std::span<const uint8_t> bytes);

/// The payload back as fp32 (header.rows() * header.cols() floats in `out`).
void decompress(const tensor_message& m, std::span<float> out);

} // namespace deepcee::messages
