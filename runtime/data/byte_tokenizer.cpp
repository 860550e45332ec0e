#include "runtime/data/byte_tokenizer.hpp"

#include <stdexcept>

namespace deepcee::runtime {

std::vector<int32_t> byte_tokenizer::encode(std::string_view text) {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size());
  for (char c : text)
    tokens.push_back(static_cast<int32_t>(static_cast<unsigned char>(c)));
  return tokens;
}

std::string byte_tokenizer::decode(std::span<const int32_t> tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab_size)
      throw std::out_of_range("byte_tokenizer::decode: token " + std::to_string(t) +
                              " outside [0, 256)");
    text.push_back(static_cast<char>(static_cast<unsigned char>(t)));
  }
  return text;
}

} // namespace deepcee::runtime
