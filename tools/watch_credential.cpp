#include "tools/watch_credential.hpp"

#include "transport/token_keys.hpp"

#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace deepcee::tools {

std::string watch_credential(std::string_view job_token) {
  return transport::derive_token_keys(std::string(job_token)).watch;
}

std::string random_watch_credential() {
  std::array<uint8_t, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw std::runtime_error("watch credential: no random bytes from OpenSSL");
  return std::string(watch_prefix) + transport::hex(bytes);
}

std::string credential_to_send(std::string_view secret) {
  if (secret.empty() || secret.starts_with(watch_prefix))
    return std::string(secret);
  return watch_credential(secret);
}

} // namespace deepcee::tools
