#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// One host-side tensor as safetensors stores it: a name, a dtype ("F32" or "I32"), a
/// shape and its raw little-endian bytes. Raw bytes (rather than a typed vector) keep a
/// round trip bit-exact, NaN payloads included, and let one type carry both dtypes.
struct named_tensor {
  std::string name;
  std::string dtype; ///< "F32" | "I32"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  static named_tensor f32(std::string name, std::vector<int64_t> shape,
                          std::span<const float> values);
  static named_tensor i32(std::string name, std::vector<int64_t> shape,
                          std::span<const int32_t> values);

  int64_t numel() const;
  /// Throw std::logic_error when the dtype differs.
  std::vector<float> to_f32() const;
  std::vector<int32_t> to_i32() const;
};

struct safetensors_file {
  std::vector<named_tensor> tensors; ///< in the order of their data in the file
  std::map<std::string, std::string> metadata;

  /// nullptr when absent.
  const named_tensor* find(const std::string& name) const;
};

/// Bytes per element of a supported dtype; 0 for any other.
size_t dtype_size(const std::string& dtype);

/// Writes the standard safetensors layout to `path + ".tmp"`: an 8-byte little-endian
/// header length, the JSON header padded with spaces to a multiple of 8, then the data in
/// the order given. It then fsyncs the file, renames it over `path` and fsyncs the
/// directory. So a crash leaves either the old checkpoint or the new one, never half of
/// one. An I/O failure is an input_error
/// naming the path; a malformed tensor (bad dtype, size not matching the shape, duplicate
/// or empty name) is a bug and throws std::invalid_argument.
void write_safetensors(const std::filesystem::path& path, const std::vector<named_tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a whole file (header length, JSON, dtypes, shapes, offsets that
/// tile the data exactly, no duplicate names); any defect is an input_error naming it.
safetensors_file read_safetensors(const std::filesystem::path& path);

} // namespace deepcee::runtime
