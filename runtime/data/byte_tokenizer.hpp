#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// Bytes are tokens: token i is byte i. Any text (UTF-8 or not) round-trips exactly, the
/// vocabulary is fixed at 256, and no merge table has to be trained or shipped with a
/// checkpoint.
class byte_tokenizer {
public:
  static constexpr int32_t vocab_size = 256;

  static std::vector<int32_t> encode(std::string_view text);

  /// Throws std::out_of_range for a token outside [0, 256): such a token is a bug in the
  /// caller (a model's vocabulary that does not match), not bad user input.
  static std::string decode(std::span<const int32_t> tokens);
};

} // namespace deepcee::runtime
