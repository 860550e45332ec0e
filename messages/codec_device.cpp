// The messages between a stage and its devices on other nodes: the rows of one op and their
// answer, and the rounds and results of the all-reduce of the stage's gradients
// (actors/device_messages.hpp).
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::messages {

using detail::checker;
using detail::float_field_bytes;
using detail::get_floats;
using detail::set_floats;

namespace {

/// Words of a message whose lists and Data fields hold `values` 4-byte values in all.
size_t device_words(size_t values) {
  return 16 + (values + 1) / 2 + 2; // each of up to four lists rounds up to a word
}

/// A Data field of Float32 values: a size that is no whole number of floats is refused before
/// it is read as one.
void check_floats(checker& c, capnp::Data::Reader data, const std::string& field) {
  c.require(data.size() % sizeof(float) == 0, field,
            "has " + std::to_string(data.size()) + " bytes, no whole number of floats");
}

/// Rows of `samples` samples: nothing, or the same number of values for every sample.
void check_rows(checker& c, size_t values, int samples, const std::string& field) {
  c.require(values % static_cast<size_t>(samples) == 0, field,
            "holds " + std::to_string(values) + " values, no whole number of rows for " +
                std::to_string(samples) + " samples");
}

/// Token ids index an embedding table: a negative one is never a token (the upper bound,
/// the vocabulary, is the receiving device's to check).
void check_tokens(checker& c, const std::vector<int32_t>& tokens, const std::string& field) {
  const auto bad = std::find_if(tokens.begin(), tokens.end(), [](int32_t t) { return t < 0; });
  if (bad != tokens.end())
    c.non_negative(*bad, field + "[" + std::to_string(bad - tokens.begin()) + "]");
}

} // namespace

std::vector<uint8_t> encode(const device_rows& m) {
  const auto kind = message_kind::device_rows;
  const unsigned input_bytes = float_field_bytes(kind, "input", m.input.size());
  const size_t words = device_words(m.tokens.size() + m.targets.size() + m.input.size());
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto s = e.initDeviceRows();
    s.setKind(m.kind);
    s.setMicroBatch(m.micro_batch);
    s.setFirstSample(m.first_sample);
    s.setSamples(m.samples);
    s.setLossScale(m.loss_scale);
    detail::fill_list(s.initTokens(static_cast<unsigned>(m.tokens.size())), m.tokens);
    detail::fill_list(s.initTargets(static_cast<unsigned>(m.targets.size())), m.targets);
    set_floats(s.initInput(input_bytes), m.input);
    s.setOutputValues(m.output_values);
    s.setRecompute(m.recompute);
  });
}

result<device_rows> decode_device_rows(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::device_rows;
  return detail::read<device_rows>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<device_rows> {
        const auto s = e.getDeviceRows();
        device_rows m;
        m.kind = s.getKind();
        m.micro_batch = s.getMicroBatch();
        m.first_sample = s.getFirstSample();
        m.samples = s.getSamples();
        m.loss_scale = s.getLossScale();
        m.output_values = s.getOutputValues();
        m.recompute = s.getRecompute();
        checker c(kind);
        c.require(m.kind >= 0 && m.kind <= 2, "kind",
                  "is no op kind (" + std::to_string(m.kind) + ")");
        c.non_negative(m.micro_batch, "micro_batch");
        c.non_negative(m.first_sample, "first_sample");
        c.require(m.samples >= 1, "samples", "is not positive (" + std::to_string(m.samples) + ")");
        c.finite(m.loss_scale, "loss_scale");
        c.non_negative(m.output_values, "output_values");
        check_floats(c, s.getInput(), "input");
        if (c.failed()) // the row checks below divide by samples
          return c.finish(std::move(m));
        m.tokens = detail::to_vector<int32_t>(s.getTokens());
        m.targets = detail::to_vector<int32_t>(s.getTargets());
        m.input = get_floats(s.getInput());
        check_rows(c, m.tokens.size(), m.samples, "tokens");
        check_rows(c, m.targets.size(), m.samples, "targets");
        check_rows(c, m.input.size(), m.samples, "input");
        c.require(m.output_values % m.samples == 0, "output_values",
                  "(" + std::to_string(m.output_values) + ") is no whole number of rows for " +
                      std::to_string(m.samples) + " samples");
        check_tokens(c, m.tokens, "tokens");
        check_tokens(c, m.targets, "targets");
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const device_output& m) {
  const auto kind = message_kind::device_output;
  const unsigned output_bytes = float_field_bytes(kind, "output", m.output.size());
  return detail::build(device_words(m.output.size()), [&](wire::Envelope::Builder e) {
    auto s = e.initDeviceOutput();
    s.setLoss(m.loss);
    set_floats(s.initOutput(output_bytes), m.output);
    s.setComputeS(m.compute_s);
  });
}

result<device_output> decode_device_output(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::device_output;
  return detail::read<device_output>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<device_output> {
        const auto s = e.getDeviceOutput();
        checker c(kind);
        // A non-finite loss is a diverged run, which the coordinator reports: data, not a
        // malformed message (refusing it would leave the stage waiting for its device).
        check_floats(c, s.getOutput(), "output");
        c.time(s.getComputeS(), "compute_s");
        if (c.failed())
          return c.finish(device_output{});
        return c.finish(device_output{s.getLoss(), get_floats(s.getOutput()), s.getComputeS()});
      });
}

std::vector<uint8_t> encode(const ring_chunk& m) {
  const auto kind = message_kind::ring_chunk;
  const unsigned value_bytes = float_field_bytes(kind, "values", m.values.size());
  return detail::build(device_words(m.values.size()), [&](wire::Envelope::Builder e) {
    auto s = e.initRingChunk();
    s.setStep(m.step);
    s.setRound(m.round);
    set_floats(s.initValues(value_bytes), m.values);
    s.setDeliverAt(m.deliver_at_ns);
  });
}

result<ring_chunk> decode_ring_chunk(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::ring_chunk;
  return detail::read<ring_chunk>(detail::aligned_copy(bytes), kind,
                                  [&](wire::Envelope::Reader e) -> result<ring_chunk> {
                                    const auto s = e.getRingChunk();
                                    ring_chunk m{s.getStep(), s.getRound(), {}, s.getDeliverAt()};
                                    checker c(kind);
                                    c.non_negative(m.step, "step");
                                    c.non_negative(m.deliver_at_ns, "deliver_at");
                                    c.non_negative(m.round, "round");
                                    check_floats(c, s.getValues(), "values");
                                    if (!c.failed())
                                      m.values = get_floats(s.getValues());
                                    return c.finish(std::move(m));
                                  });
}

std::vector<uint8_t> encode(const gradient_values& m) {
  const auto kind = message_kind::gradient_values;
  const unsigned value_bytes = float_field_bytes(kind, "values", m.values.size());
  return detail::build(device_words(m.values.size()), [&](wire::Envelope::Builder e) {
    auto s = e.initGradientValues();
    s.setStep(m.step);
    s.setOffset(m.offset);
    set_floats(s.initValues(value_bytes), m.values);
  });
}

result<gradient_values> decode_gradient_values(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::gradient_values;
  return detail::read<gradient_values>(detail::aligned_copy(bytes), kind,
                                       [&](wire::Envelope::Reader e) -> result<gradient_values> {
                                         const auto s = e.getGradientValues();
                                         gradient_values m{s.getStep(), {}, s.getOffset()};
                                         checker c(kind);
                                         c.non_negative(m.step, "step");
                                         c.non_negative(m.offset, "offset");
                                         check_floats(c, s.getValues(), "values");
                                         if (!c.failed())
                                           m.values = get_floats(s.getValues());
                                         return c.finish(std::move(m));
                                       });
}

} // namespace deepcee::messages
