#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

/// The handshake that every connection to a node's public port must pass before a single
/// byte of it reaches CAF. Both sides prove they hold the job's token without sending it:
///
///   client -> server  hello     "DCG1" + client nonce                 (36 bytes)
///   server -> client  challenge "DCG1" + server nonce + server proof  (68 bytes)
///   client -> server  proof     client proof                          (32 bytes)
///
/// A proof is HMAC-SHA256(token, label + client nonce + server nonce), with a different
/// label per side, so neither proof can be replayed as the other. Every message has a fixed
/// size: a peer can make the server read at most `max_pre_auth_bytes` before it is
/// authenticated. Both nonces also key the session (sealed_records.hpp).
namespace deepcee::transport {

using bytes = std::vector<uint8_t>;
using nonce = std::array<uint8_t, 32>;
using key = std::array<uint8_t, 32>;

constexpr size_t magic_bytes = 4;
constexpr size_t mac_bytes = 32;
constexpr size_t hello_bytes = magic_bytes + sizeof(nonce);
constexpr size_t challenge_bytes = magic_bytes + sizeof(nonce) + mac_bytes;
constexpr size_t proof_bytes = mac_bytes;
/// All a server reads from a peer before it knows the peer holds the token.
constexpr size_t max_pre_auth_bytes = hello_bytes + proof_bytes;

/// The keys of one connection, per direction.
struct session_keys {
  key client_to_server{};
  key server_to_client{};
};

/// HMAC-SHA256 of the concatenated `parts` under `secret`.
key hmac_sha256(const std::string& secret, std::initializer_list<std::span<const uint8_t>> parts);

/// A nonce from the operating system's random source (OpenSSL's RAND_bytes).
nonce random_nonce();

/// Compares in time independent of where the bytes first differ.
bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b);

/// What one step of a handshake produced: the bytes to send now, and whether it failed.
struct step {
  bytes send;
  std::string refusal; ///< why the peer is refused; empty when it is not
  bool failed() const { return !refusal.empty(); }
};

/// The side that dialled. hello() first, then exactly challenge_bytes fed to answer().
class client_handshake {
public:
  client_handshake(std::string token, nonce mine);
  bytes hello() const;
  /// The server's challenge: proves the server holds the token, or refuses it.
  step answer(std::span<const uint8_t> challenge);
  bool done() const { return done_; }
  session_keys keys() const; ///< once done()

private:
  std::string token_;
  nonce mine_, theirs_{};
  bool done_ = false;
};

/// The side that accepted. wanted() bytes at a time go to feed() until done() or a refusal.
class server_handshake {
public:
  server_handshake(std::string token, nonce mine);
  /// The size of the next message the server reads; 0 once it is done or has refused.
  size_t wanted() const;
  step feed(std::span<const uint8_t> message);
  bool done() const { return state_ == state::done; }
  session_keys keys() const; ///< once done()

private:
  enum class state { awaiting_hello, awaiting_proof, done, refused };
  step refuse(std::string why);

  std::string token_;
  nonce mine_, theirs_{};
  state state_ = state::awaiting_hello;
};

} // namespace deepcee::transport
