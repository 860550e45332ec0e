#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

/// What the job's token becomes on the wire, by HKDF-SHA256: never the token itself. A
/// token-only job's TLS 1.3 runs on an external pre-shared key (`psk`) named by `identity`;
/// a job with certificates proves the token inside its TLS session with `proof`, bound to
/// that session by the TLS exporter (tls_stream::prove_token), so a proof relayed from
/// another session does not verify. The identity is public and tells nothing of the key,
/// and differs between jobs: a peer of another job is refused by it. `watch` is the
/// read-only credential of the job's inspection endpoint (tools/watch_credential.hpp): it
/// tells nothing of the token, and can only read.
namespace deepcee::transport {

using key32 = std::array<uint8_t, 32>;

struct token_keys {
  key32 psk{};
  std::string identity; ///< "deepcee1-" and 32 hex digits
  key32 proof{};
  std::string watch; ///< "dcw1-" and 64 hex digits
};

/// Throws std::runtime_error when OpenSSL cannot derive.
token_keys derive_token_keys(const std::string& token);

/// HMAC-SHA256 of `label` and `data` under `secret`.
key32 hmac_sha256(const key32& secret, const std::string& label, std::span<const uint8_t> data);

/// Two lowercase hex digits per byte.
std::string hex(std::span<const uint8_t> bytes);

/// Compares in time independent of where the bytes first differ.
bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b);

} // namespace deepcee::transport
