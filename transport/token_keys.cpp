#include "transport/token_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include <memory>
#include <stdexcept>

namespace deepcee::transport {

namespace {

struct pkey_ctx_free {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};

/// HKDF-SHA256 (RFC 5869) of the token, one output per `info`: the salt names the scheme so
/// that no other use of the same token yields these keys.
key32 hkdf(const std::string& token, const std::string& info) {
  static constexpr std::string_view salt = "deepcee job token v1";
  std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> c(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  key32 out{};
  size_t length = out.size();
  if (!c || EVP_PKEY_derive_init(c.get()) <= 0 ||
      EVP_PKEY_CTX_set_hkdf_md(c.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(c.get(), reinterpret_cast<const unsigned char*>(salt.data()),
                                  static_cast<int>(salt.size())) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(c.get(), reinterpret_cast<const unsigned char*>(token.data()),
                                 static_cast<int>(token.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(c.get(), reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) <= 0 ||
      EVP_PKEY_derive(c.get(), out.data(), &length) <= 0 || length != out.size())
    throw std::runtime_error("OpenSSL cannot derive keys from the job's token (HKDF)");
  return out;
}

} // namespace

token_keys derive_token_keys(const std::string& token) {
  token_keys k;
  k.psk = hkdf(token, "tls13 external psk");
  const auto id = hkdf(token, "tls13 psk identity");
  k.identity = "deepcee1-" + hex(std::span(id).first(16));
  k.proof = hkdf(token, "token proof in a certificate session");
  k.watch = "dcw1-" + hex(hkdf(token, "watch credential"));
  return k;
}

std::string hex(std::span<const uint8_t> b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (const uint8_t x : b) {
    s += digits[x >> 4];
    s += digits[x & 15];
  }
  return s;
}

key32 hmac_sha256(const key32& secret, const std::string& label, std::span<const uint8_t> data) {
  std::string message = label;
  message.push_back('\0');
  message.append(reinterpret_cast<const char*>(data.data()), data.size());
  key32 out{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(),
            &length) ||
      length != out.size())
    throw std::runtime_error("OpenSSL cannot compute an HMAC");
  return out;
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace deepcee::transport
