#include "transport/sealed_records.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace deepcee::transport {

namespace {

using cipher_ctx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

cipher_ctx new_ctx() {
  cipher_ctx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  if (!ctx)
    throw std::bad_alloc();
  return ctx;
}

/// GCM's 12-byte nonce: four zero bytes and the record's number. A key is used for one
/// direction of one connection only, so no nonce repeats under it.
std::array<uint8_t, 12> record_nonce(uint64_t sequence) {
  std::array<uint8_t, 12> iv{};
  for (int i = 0; i < 8; ++i)
    iv[static_cast<size_t>(11 - i)] = static_cast<uint8_t>(sequence >> (8 * i));
  return iv;
}

std::array<uint8_t, record_header_bytes> header_of(size_t length) {
  return {static_cast<uint8_t>(length >> 24), static_cast<uint8_t>(length >> 16),
          static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length)};
}

} // namespace

bytes record_sealer::seal(std::span<const uint8_t> plain) {
  if (plain.size() > max_record_plain)
    throw std::logic_error("record_sealer::seal: " + std::to_string(plain.size()) +
                           " bytes, a record holds at most " + std::to_string(max_record_plain));
  const auto header = header_of(plain.size());
  const auto iv = record_nonce(sequence_++);
  bytes out(record_header_bytes + plain.size() + record_tag_bytes);
  std::copy(header.begin(), header.end(), out.begin());
  auto ctx = new_ctx();
  int n = 0, tail = 0;
  const bool ok =
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), iv.data()) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, header.data(), int(header.size())) == 1 &&
      EVP_EncryptUpdate(ctx.get(), out.data() + record_header_bytes, &n, plain.data(),
                        int(plain.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx.get(), out.data() + record_header_bytes + n, &tail) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, int(record_tag_bytes),
                          out.data() + record_header_bytes + plain.size()) == 1;
  if (!ok)
    throw std::runtime_error("AES-256-GCM sealing failed in libcrypto");
  return out;
}

std::optional<size_t>
record_opener::body_bytes(std::span<const uint8_t, record_header_bytes> header) {
  const size_t length = size_t{header[0]} << 24 | size_t{header[1]} << 16 | size_t{header[2]} << 8 |
                        size_t{header[3]};
  if (length > max_record_plain)
    return std::nullopt;
  return length + record_tag_bytes;
}

std::optional<bytes> record_opener::open(std::span<const uint8_t, record_header_bytes> header,
                                         std::span<const uint8_t> body) {
  const auto want = body_bytes(header);
  if (!want || body.size() != *want)
    return std::nullopt;
  const size_t length = body.size() - record_tag_bytes;
  const auto iv = record_nonce(sequence_);
  bytes plain(length);
  auto ctx = new_ctx();
  int n = 0, tail = 0;
  // The tag is set before the final step checks it; EVP wants a mutable pointer.
  std::array<uint8_t, record_tag_bytes> tag{};
  std::copy(body.end() - record_tag_bytes, body.end(), tag.begin());
  const bool ok =
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), iv.data()) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, header.data(), int(header.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), plain.data(), &n, body.data(), int(length)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, int(tag.size()), tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), plain.data() + n, &tail) == 1;
  if (!ok)
    return std::nullopt;
  ++sequence_;
  return plain;
}

} // namespace deepcee::transport
