#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

/// Encodings of fp32 tensor payloads for transfers across slow links. Pure functions over
/// spans; a tensor is seen as `rows` x `cols` (cols = its last dimension), which for a
/// stage boundary activation [b, T, C] is one row per token.
///
/// Layouts (the bytes runtime::model_spec::transfer_bytes counts):
/// - f32: rows * cols * 4, native little-endian floats;
/// - f16: rows * cols * 2, IEEE binary16, round to nearest even;
/// - bf16: rows * cols * 2, the top half of the fp32 bits, round to nearest even;
/// - int8: rows fp32 scales (absmax / 127 of each row) first, so they stay aligned, then
///   rows * cols int8 values q = round(x / scale) in [-127, 127]; x ~ q * scale.
namespace deepcee::messages {

enum class tensor_dtype : uint8_t { f32, f16, bf16, int8 };

std::string_view to_string(tensor_dtype d);
/// Known values only: a byte off the wire may hold anything.
std::optional<tensor_dtype> dtype_from_index(unsigned index);

/// Bytes of one element (int8 scales not included).
size_t element_bytes(tensor_dtype d);

/// Exact payload size of a rows x cols fp32 tensor in the given encoding, or -1 when
/// rows or cols is negative or the size overflows int64.
int64_t payload_bytes(tensor_dtype d, int64_t rows, int64_t cols);

uint16_t fp32_to_fp16(float x);
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float x);
float bf16_to_fp32(uint16_t h);

/// Writes `src` (rows * cols floats) into `dst` (exactly payload_bytes(d, rows, cols)).
/// `dst` may be unaligned except for int8, whose scales are written with memcpy anyway.
/// Sizes that disagree are a caller's bug: std::invalid_argument.
void compress(std::span<const float> src, int64_t rows, int64_t cols, tensor_dtype d,
              std::span<uint8_t> dst);

/// Inverse of compress: `src` is payload_bytes(d, rows, cols) bytes, `dst` rows * cols.
void decompress(std::span<const uint8_t> src, int64_t rows, int64_t cols, tensor_dtype d,
                std::span<float> dst);

} // namespace deepcee::messages
