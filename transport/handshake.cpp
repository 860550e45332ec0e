#include "transport/handshake.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>
#include <string_view>

namespace deepcee::transport {

namespace {

constexpr std::array<uint8_t, magic_bytes> magic{'D', 'C', 'G', '1'};

std::span<const uint8_t> text(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

/// The proof of one side: the label keeps a server's proof from passing as a client's.
key proof(const std::string& token, std::string_view label, const nonce& client,
          const nonce& server) {
  return hmac_sha256(token, {text(label), client, server});
}

session_keys derive_keys(const std::string& token, const nonce& client, const nonce& server) {
  return {hmac_sha256(token, {text("deepcee gate c2s"), client, server}),
          hmac_sha256(token, {text("deepcee gate s2c"), client, server})};
}

} // namespace

key hmac_sha256(const std::string& secret, std::initializer_list<std::span<const uint8_t>> parts) {
  HMAC_CTX* ctx = HMAC_CTX_new();
  if (!ctx)
    throw std::bad_alloc();
  key out{};
  unsigned int length = 0;
  const bool ok = HMAC_Init_ex(ctx, secret.data(), static_cast<int>(secret.size()), EVP_sha256(),
                               nullptr) == 1 &&
                  std::all_of(parts.begin(), parts.end(),
                              [&](std::span<const uint8_t> p) {
                                return HMAC_Update(ctx, p.data(), p.size()) == 1;
                              }) &&
                  HMAC_Final(ctx, out.data(), &length) == 1 && length == out.size();
  HMAC_CTX_free(ctx);
  if (!ok)
    throw std::runtime_error("HMAC-SHA256 failed in libcrypto");
  return out;
}

nonce random_nonce() {
  nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    throw std::runtime_error("no random bytes from libcrypto");
  return n;
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

client_handshake::client_handshake(std::string token, nonce mine)
    : token_(std::move(token)), mine_(mine) {}

bytes client_handshake::hello() const {
  bytes out(magic.begin(), magic.end());
  out.insert(out.end(), mine_.begin(), mine_.end());
  return out;
}

step client_handshake::answer(std::span<const uint8_t> challenge) {
  if (challenge.size() != challenge_bytes || !same_bytes(challenge.first(magic_bytes), magic))
    return {{}, "it does not speak deepcee's handshake"};
  std::copy_n(challenge.begin() + magic_bytes, theirs_.size(), theirs_.begin());
  const auto expected = proof(token_, "deepcee gate server", mine_, theirs_);
  if (!same_bytes(challenge.last(mac_bytes), expected))
    return {{}, "it does not hold the job's token"};
  done_ = true;
  const auto mine = proof(token_, "deepcee gate client", mine_, theirs_);
  return {bytes(mine.begin(), mine.end()), {}};
}

session_keys client_handshake::keys() const {
  if (!done_)
    throw std::logic_error("client_handshake::keys before the handshake is done");
  return derive_keys(token_, mine_, theirs_);
}

server_handshake::server_handshake(std::string token, nonce mine)
    : token_(std::move(token)), mine_(mine) {}

size_t server_handshake::wanted() const {
  switch (state_) {
  case state::awaiting_hello:
    return hello_bytes;
  case state::awaiting_proof:
    return proof_bytes;
  default:
    return 0;
  }
}

step server_handshake::refuse(std::string why) {
  state_ = state::refused;
  return {{}, std::move(why)};
}

step server_handshake::feed(std::span<const uint8_t> message) {
  if (message.size() != wanted() || wanted() == 0)
    return refuse("a handshake message of " + std::to_string(message.size()) + " bytes where " +
                  std::to_string(wanted()) + " were due");
  if (state_ == state::awaiting_hello) {
    if (!same_bytes(message.first(magic_bytes), magic))
      return refuse("it does not speak deepcee's handshake");
    std::copy_n(message.begin() + magic_bytes, theirs_.size(), theirs_.begin());
    state_ = state::awaiting_proof;
    bytes out(magic.begin(), magic.end());
    out.insert(out.end(), mine_.begin(), mine_.end());
    const auto mac = proof(token_, "deepcee gate server", theirs_, mine_);
    out.insert(out.end(), mac.begin(), mac.end());
    return {std::move(out), {}};
  }
  if (!same_bytes(message, proof(token_, "deepcee gate client", theirs_, mine_)))
    return refuse("it does not hold the job's token");
  state_ = state::done;
  return {};
}

session_keys server_handshake::keys() const {
  if (state_ != state::done)
    throw std::logic_error("server_handshake::keys before the handshake is done");
  return derive_keys(token_, theirs_, mine_);
}

} // namespace deepcee::transport
