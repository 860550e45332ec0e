#pragma once

// Internal to deepcee_messages: the only header that sees the generated wire types, which
// are not on the include path of the library's users.

#include "messages/deepcee.capnp.h"
#include "messages/result.hpp"
#include "messages/types.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace deepcee::messages::detail {

// Payload views reinterpret the wire's little-endian bytes in place.
static_assert(std::endian::native == std::endian::little);

/// Builds one Envelope. The message is laid out straight into the returned vector when it
/// fits in `estimate_words` (one segment), so a large Data field is written exactly once;
/// otherwise it falls back to Cap'n Proto's own allocation and one more copy.
std::vector<uint8_t> build(size_t estimate_words,
                           const std::function<void(wire::Envelope::Builder)>& fill);

/// build() in two steps, for a message whose fields are filled after its construction (a
/// tensor whose payload the devices write later): `root()` is valid until `finish()`,
/// which hands over the bytes once.
class envelope_builder {
public:
  explicit envelope_builder(size_t estimate_words);
  ~envelope_builder();
  envelope_builder(const envelope_builder&) = delete;
  envelope_builder& operator=(const envelope_builder&) = delete;

  wire::Envelope::Builder root() { return root_; }
  std::vector<uint8_t> finish();

private:
  std::vector<uint8_t> out_;
  std::unique_ptr<capnp::MessageBuilder> builder_;
  capnp::word* first_ = nullptr; ///< the in-place segment, or null (Cap'n Proto's own)
  wire::Envelope::Builder root_;
};

/// Received bytes as words that Cap'n Proto can read in place.
struct word_buffer {
  std::shared_ptr<const void> owner;
  kj::ArrayPtr<const capnp::word> words;
};

/// Copies into a fresh word-aligned buffer, refusing sizes that are no message at all.
result<word_buffer> aligned_copy(std::span<const uint8_t> bytes);
/// Takes the vector over without copying when its storage is word aligned (heap storage is,
/// in practice); copies otherwise.
result<word_buffer> adopt(std::vector<uint8_t>&& bytes);

std::optional<message_kind> kind_of(wire::Envelope::Which which);

/// The reader over a whole buffer: the message must end exactly where the bytes end, and
/// the traversal limit is proportional to the input, so no message can make the reader
/// walk more than a few times its own size.
capnp::ReaderOptions reader_options(const word_buffer& in);
std::optional<decode_error> check_envelope(capnp::FlatArrayMessageReader& reader,
                                           const word_buffer& in, message_kind want);

/// Runs `extract` on the Envelope of the wanted kind; Cap'n Proto's exceptions (truncated
/// segments, out-of-bounds pointers, traversal limit) become error values.
template <class T, class Extract>
result<T> read(const result<word_buffer>& in, message_kind want, Extract&& extract) {
  if (!in)
    return in.error();
  try {
    capnp::FlatArrayMessageReader reader(in->words, reader_options(*in));
    if (auto error = check_envelope(reader, *in, want))
      return *error;
    return extract(reader.getRoot<wire::Envelope>());
  } catch (const kj::Exception& e) {
    return decode_error{std::string(to_string(want)) +
                        ": malformed message: " + e.getDescription().cStr()};
  } catch (const std::exception& e) {
    return decode_error{std::string(to_string(want)) + ": " + e.what()};
  }
}

/// Collects the first violation of a message's rules, naming the field.
class checker {
public:
  explicit checker(message_kind kind) : kind_(kind) {}

  void require(bool ok, const std::string& field, const std::string& why) {
    if (!ok && !error_)
      error_ = decode_error{std::string(to_string(kind_)) + ": " + field + " " + why};
  }
  void non_negative(int64_t v, const std::string& field) {
    require(v >= 0, field, "is negative (" + std::to_string(v) + ")");
  }
  void time(double t, const std::string& field) {
    require(std::isfinite(t) && t >= 0.0, field,
            "is not a finite non-negative time (" + std::to_string(t) + ")");
  }
  void finite(double v, const std::string& field) {
    require(std::isfinite(v), field, "is not finite");
  }
  template <class Enum>
  void known(Enum v, Enum last, const std::string& field) {
    require(static_cast<unsigned>(v) <= static_cast<unsigned>(last), field,
            "has unknown value " + std::to_string(static_cast<unsigned>(v)));
  }

  template <class T>
  result<T> finish(T value) {
    if (error_)
      return *error_;
    return value;
  }
  bool failed() const { return error_.has_value(); }

private:
  message_kind kind_;
  std::optional<decode_error> error_;
};

template <class T, class List>
std::vector<T> to_vector(List list) {
  std::vector<T> out;
  out.reserve(list.size());
  for (auto v : list)
    out.push_back(static_cast<T>(v));
  return out;
}

template <class List, class T>
void fill_list(List list, const std::vector<T>& values) {
  for (unsigned i = 0; i < values.size(); ++i)
    list.set(i, values[i]);
}

std::string text(capnp::Text::Reader t);

/// Float32 values as a Data field's little-endian bytes, and back (the caller has checked
/// that the size is a whole number of floats). memcpy, because a Data field is only byte
/// aligned; the bits cross unchanged.
void set_floats(capnp::Data::Builder data, std::span<const float> values);
std::vector<float> get_floats(capnp::Data::Reader data);

/// The bytes of `values` as one Data field; throws std::invalid_argument naming the message
/// and the field when they are more than one field holds (max_payload_bytes).
unsigned float_field_bytes(message_kind kind, const char* field, size_t values);

} // namespace deepcee::messages::detail
