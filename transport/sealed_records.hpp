#pragma once

#include "transport/handshake.hpp"

#include <cstdint>
#include <optional>
#include <span>

/// After the handshake every byte between two gates travels in sealed records:
///
///   length (4 bytes, big-endian, of the plain text) | AES-256-GCM cipher text | tag (16)
///
/// The length is authenticated with the record and the nonce is the record's number in its
/// direction, so a record that is altered, replayed, dropped or reordered fails to open and
/// ends the connection. A length above `max_record_plain` ends it before anything is read
/// or allocated: no peer can make a gate hold more than one record.
namespace deepcee::transport {

constexpr size_t record_header_bytes = 4;
constexpr size_t record_tag_bytes = 16;
constexpr size_t max_record_plain = 16 * 1024;

/// Seals the records of one direction.
class record_sealer {
public:
  explicit record_sealer(const key& k) : key_(k) {}
  /// One record holding `plain` (at most max_record_plain bytes).
  bytes seal(std::span<const uint8_t> plain);

private:
  key key_;
  uint64_t sequence_ = 0;
};

/// Opens the records of one direction, in order.
class record_opener {
public:
  explicit record_opener(const key& k) : key_(k) {}
  /// The cipher text and tag bytes that follow `header`, or nothing when the header claims
  /// more than a record may hold.
  static std::optional<size_t> body_bytes(std::span<const uint8_t, record_header_bytes> header);
  /// The plain text, or nothing when the record was not sealed by the peer with this
  /// session's key as the next record.
  std::optional<bytes> open(std::span<const uint8_t, record_header_bytes> header,
                            std::span<const uint8_t> body);

private:
  key key_;
  uint64_t sequence_ = 0;
};

} // namespace deepcee::transport
