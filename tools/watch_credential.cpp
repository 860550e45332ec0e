#include "tools/watch_credential.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace deepcee::tools {

namespace {

std::string hex_of(const unsigned char* bytes, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(watch_prefix);
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

} // namespace

std::string watch_credential(std::string_view job_token) {
  static constexpr std::string_view label = "deepcee watch credential v1";
  std::array<unsigned char, 32> mac{};
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), job_token.data(), static_cast<int>(job_token.size()),
            reinterpret_cast<const unsigned char*>(label.data()), label.size(), mac.data(), &size))
    throw std::runtime_error("watch credential: HMAC-SHA256 failed");
  return hex_of(mac.data(), size);
}

std::string random_watch_credential() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw std::runtime_error("watch credential: no random bytes from OpenSSL");
  return hex_of(bytes.data(), bytes.size());
}

std::string credential_to_send(std::string_view secret) {
  if (secret.empty() || secret.starts_with(watch_prefix))
    return std::string(secret);
  return watch_credential(secret);
}

} // namespace deepcee::tools
