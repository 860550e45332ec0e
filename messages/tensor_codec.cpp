#include "messages/tensor_codec.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace deepcee::messages {

namespace {

uint32_t bits_of(float x) {
  return std::bit_cast<uint32_t>(x);
}
float float_of(uint32_t u) {
  return std::bit_cast<float>(u);
}

void check_sizes(size_t floats, size_t bytes, int64_t rows, int64_t cols, tensor_dtype d,
                 const char* who) {
  const int64_t want = payload_bytes(d, rows, cols);
  if (want < 0 || floats != static_cast<size_t>(rows * cols) || bytes != static_cast<size_t>(want))
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(floats) + " floats and " +
                                std::to_string(bytes) + " bytes for a " + std::to_string(rows) +
                                " x " + std::to_string(cols) + " " + std::string(to_string(d)) +
                                " tensor");
}

/// Elements are stored with memcpy so that any destination alignment works and the
/// compiler still vectorizes the loop.
template <class Convert>
void narrow16(std::span<const float> src, uint8_t* dst, Convert convert) {
  for (size_t i = 0; i < src.size(); ++i) {
    const uint16_t h = convert(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <class Convert>
void widen16(const uint8_t* src, std::span<float> dst, Convert convert) {
  for (size_t i = 0; i < dst.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = convert(h);
  }
}

void quantize_int8(std::span<const float> src, int64_t rows, int64_t cols, uint8_t* dst) {
  uint8_t* values = dst + rows * sizeof(float);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src.data() + r * cols;
    float absmax = 0.0f;
    for (int64_t c = 0; c < cols; ++c)
      absmax = std::max(absmax, std::fabs(x[c]));
    // A non-finite row keeps its non-finite scale: the receiver sees the divergence
    // instead of a silently clamped tensor.
    const float scale = absmax / 127.0f;
    std::memcpy(dst + r * sizeof(float), &scale, sizeof(float));
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    auto* q = reinterpret_cast<int8_t*>(values + r * cols);
    for (int64_t c = 0; c < cols; ++c) {
      const float v = std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f);
      q[c] = static_cast<int8_t>(std::isnan(v) ? 0.0f : v);
    }
  }
}

void dequantize_int8(const uint8_t* src, int64_t rows, int64_t cols, std::span<float> dst) {
  const uint8_t* values = src + rows * sizeof(float);
  for (int64_t r = 0; r < rows; ++r) {
    float scale;
    std::memcpy(&scale, src + r * sizeof(float), sizeof(float));
    const auto* q = reinterpret_cast<const int8_t*>(values + r * cols);
    float* y = dst.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      y[c] = static_cast<float>(q[c]) * scale;
  }
}

} // namespace

std::string_view to_string(tensor_dtype d) {
  switch (d) {
  case tensor_dtype::f32:
    return "f32";
  case tensor_dtype::f16:
    return "f16";
  case tensor_dtype::bf16:
    return "bf16";
  case tensor_dtype::int8:
    return "int8";
  }
  return "unknown";
}

std::optional<tensor_dtype> dtype_from_index(unsigned index) {
  if (index > static_cast<unsigned>(tensor_dtype::int8))
    return std::nullopt;
  return static_cast<tensor_dtype>(index);
}

size_t element_bytes(tensor_dtype d) {
  switch (d) {
  case tensor_dtype::f32:
    return 4;
  case tensor_dtype::f16:
  case tensor_dtype::bf16:
    return 2;
  case tensor_dtype::int8:
    return 1;
  }
  return 4;
}

int64_t payload_bytes(tensor_dtype d, int64_t rows, int64_t cols) {
  constexpr int64_t max = std::numeric_limits<int64_t>::max() / 8;
  if (rows < 0 || cols < 0 || rows > max || cols > max || (cols > 0 && rows > max / cols))
    return -1;
  const int64_t values = rows * cols;
  const int64_t scales = d == tensor_dtype::int8 ? rows * int64_t(sizeof(float)) : 0;
  return values * static_cast<int64_t>(element_bytes(d)) + scales;
}

// Branch-free fp16 conversions after Marat Dukhan's FP16 library: the float unit does the
// rounding (to nearest even), including subnormals, overflow to infinity and NaN.
uint16_t fp32_to_fp16(float x) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(x) * scale_to_inf) * scale_to_zero;
  const uint32_t w = bits_of(x);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t b = bits_of(base);
  const uint32_t exp_bits = (b >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = b & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float fp16_to_fp32(uint16_t h) {
  const uint32_t w = uint32_t(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = float_of((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = float_of((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t cutoff = 1u << 27;
  return float_of(sign | (two_w < cutoff ? bits_of(denormalized) : bits_of(normalized)));
}

uint16_t fp32_to_bf16(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it a (quiet) NaN, rounding could make inf
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_fp32(uint16_t h) {
  return float_of(uint32_t(h) << 16);
}

void compress(std::span<const float> src, int64_t rows, int64_t cols, tensor_dtype d,
              std::span<uint8_t> dst) {
  check_sizes(src.size(), dst.size(), rows, cols, d, "compress");
  switch (d) {
  case tensor_dtype::f32:
    if (!src.empty())
      std::memcpy(dst.data(), src.data(), dst.size());
    return;
  case tensor_dtype::f16:
    return narrow16(src, dst.data(), fp32_to_fp16);
  case tensor_dtype::bf16:
    return narrow16(src, dst.data(), fp32_to_bf16);
  case tensor_dtype::int8:
    return quantize_int8(src, rows, cols, dst.data());
  }
}

void decompress(std::span<const uint8_t> src, int64_t rows, int64_t cols, tensor_dtype d,
                std::span<float> dst) {
  check_sizes(dst.size(), src.size(), rows, cols, d, "decompress");
  switch (d) {
  case tensor_dtype::f32:
    if (!dst.empty())
      std::memcpy(dst.data(), src.data(), src.size());
    return;
  case tensor_dtype::f16:
    return widen16(src.data(), dst, fp16_to_fp32);
  case tensor_dtype::bf16:
    return widen16(src.data(), dst, bf16_to_fp32);
  case tensor_dtype::int8:
    return dequantize_int8(src.data(), rows, cols, dst);
  }
}

} // namespace deepcee::messages
