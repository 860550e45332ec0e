#include "messages/wire.hpp"

#include "messages/codec.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace deepcee::messages::detail {

namespace {

constexpr size_t word_bytes = sizeof(capnp::word);

std::vector<uint8_t> flatten(capnp::MessageBuilder& builder) {
  const auto flat = capnp::messageToFlatArray(builder);
  const auto bytes = flat.asBytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

/// Lays the first segment into memory the caller owns and leaves it there. (Cap'n Proto's
/// MallocMessageBuilder also takes a first segment, but zeroes it again in its destructor,
/// which would wipe the message we are returning.) Further segments, when the estimate was
/// short, are the builder's own.
class in_place_builder : public capnp::MessageBuilder {
public:
  explicit in_place_builder(kj::ArrayPtr<capnp::word> first) : first_(first) {}

  kj::ArrayPtr<capnp::word> allocateSegment(unsigned minimum) override {
    if (!first_used_ && first_.size() >= minimum) {
      first_used_ = true;
      return first_;
    }
    first_used_ = true;
    const size_t size = std::max<size_t>(minimum, first_.size());
    auto& segment = more_.emplace_back(std::make_unique<capnp::word[]>(size));
    return kj::arrayPtr(segment.get(), size);
  }

private:
  kj::ArrayPtr<capnp::word> first_;
  bool first_used_ = false;
  std::vector<std::unique_ptr<capnp::word[]>> more_;
};

/// The kinds in the order of the Envelope's union (message_list.hpp), so that a member's
/// discriminant indexes its kind; the test of the list checks the order against the schema.
constexpr message_kind kinds_by_discriminant[] = {
#define DEEPCEE_KIND_AT(type, kind, schema) message_kind::kind,
    DEEPCEE_WIRE_MESSAGES(DEEPCEE_KIND_AT)
#undef DEEPCEE_KIND_AT
};

// Every entry's schema struct exists and is what the Envelope member of its name holds.
#define DEEPCEE_ENVELOPE_HOLDS(type, kind, schema)                                                 \
  static_assert(std::is_same_v<decltype(std::declval<wire::Envelope::Reader>().get##schema()),     \
                               wire::schema::Reader>);
DEEPCEE_WIRE_MESSAGES(DEEPCEE_ENVELOPE_HOLDS)
#undef DEEPCEE_ENVELOPE_HOLDS

} // namespace

envelope_builder::envelope_builder(size_t estimate_words)
    // One word of segment table (count - 1 = 0, then the size), then the segment. The vector
    // zero-fills, as a segment must be.
    : out_((1 + estimate_words) * word_bytes), root_(nullptr) {
  if (reinterpret_cast<uintptr_t>(out_.data()) % alignof(capnp::word) != 0) {
    builder_ = std::make_unique<capnp::MallocMessageBuilder>();
  } else {
    first_ = reinterpret_cast<capnp::word*>(out_.data()) + 1;
    builder_ = std::make_unique<in_place_builder>(kj::arrayPtr(first_, estimate_words));
  }
  root_ = builder_->initRoot<wire::Envelope>();
}

envelope_builder::~envelope_builder() = default;

std::vector<uint8_t> envelope_builder::finish() {
  const auto segments = builder_->getSegmentsForOutput();
  if (first_ == nullptr || segments.size() != 1 || segments[0].begin() != first_)
    return flatten(*builder_);
  const uint32_t table[2] = {0, static_cast<uint32_t>(segments[0].size())};
  std::memcpy(out_.data(), table, sizeof(table));
  out_.resize((1 + segments[0].size()) * word_bytes);
  return std::move(out_);
}

std::vector<uint8_t> build(size_t estimate_words,
                           const std::function<void(wire::Envelope::Builder)>& fill) {
  envelope_builder builder(estimate_words);
  fill(builder.root());
  return builder.finish();
}

result<word_buffer> aligned_copy(std::span<const uint8_t> bytes) {
  if (bytes.empty() || bytes.size() % word_bytes != 0)
    return decode_error{"message of " + std::to_string(bytes.size()) +
                        " bytes is not a whole number of 8-byte words"};
  const size_t n = bytes.size() / word_bytes;
  std::shared_ptr<capnp::word[]> words(new capnp::word[n]);
  std::memcpy(words.get(), bytes.data(), bytes.size());
  return word_buffer{words, kj::arrayPtr(static_cast<const capnp::word*>(words.get()), n)};
}

result<word_buffer> adopt(std::vector<uint8_t>&& bytes) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(capnp::word) != 0)
    return aligned_copy(bytes);
  if (bytes.empty() || bytes.size() % word_bytes != 0)
    return decode_error{"message of " + std::to_string(bytes.size()) +
                        " bytes is not a whole number of 8-byte words"};
  auto owner = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  const auto* words = reinterpret_cast<const capnp::word*>(owner->data());
  return word_buffer{owner, kj::arrayPtr(words, owner->size() / word_bytes)};
}

std::optional<message_kind> kind_of(wire::Envelope::Which which) {
  const auto at = static_cast<size_t>(which);
  if (at >= std::size(kinds_by_discriminant))
    return std::nullopt;
  return kinds_by_discriminant[at];
}

capnp::ReaderOptions reader_options(const word_buffer& in) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 4 * in.words.size() + 1024;
  options.nestingLimit = 16; // the deepest message (a deployment) nests 5 levels
  return options;
}

std::optional<decode_error> check_envelope(capnp::FlatArrayMessageReader& reader,
                                           const word_buffer& in, message_kind want) {
  if (reader.getEnd() != in.words.end())
    return decode_error{std::string(to_string(want)) + ": " +
                        std::to_string((in.words.end() - reader.getEnd()) * word_bytes) +
                        " bytes after the end of the message"};
  // getRoot may throw on a bad root pointer; read() catches it.
  const auto which = reader.getRoot<wire::Envelope>().which();
  const auto got = kind_of(which);
  if (!got)
    return decode_error{std::string(to_string(want)) + ": unknown message kind " +
                        std::to_string(static_cast<unsigned>(which))};
  if (*got != want)
    return decode_error{"expected " + std::string(to_string(want)) + ", got " +
                        std::string(to_string(*got))};
  return std::nullopt;
}

std::string text(capnp::Text::Reader t) {
  return std::string(t.cStr(), t.size());
}

void set_floats(capnp::Data::Builder data, std::span<const float> values) {
  if (!values.empty())
    std::memcpy(data.begin(), values.data(), values.size() * sizeof(float));
}

std::vector<float> get_floats(capnp::Data::Reader data) {
  std::vector<float> out(data.size() / sizeof(float));
  if (!out.empty())
    std::memcpy(out.data(), data.begin(), out.size() * sizeof(float));
  return out;
}

unsigned float_field_bytes(message_kind kind, const char* field, size_t values) {
  const auto most = static_cast<size_t>(max_payload_bytes);
  if (values > most / sizeof(float))
    throw std::invalid_argument(std::string(to_string(kind)) + ": " + field + " has " +
                                std::to_string(values * sizeof(float)) +
                                " bytes, more than one Cap'n Proto message field holds (" +
                                std::to_string(most) + ")");
  return static_cast<unsigned>(values * sizeof(float));
}

} // namespace deepcee::messages::detail
