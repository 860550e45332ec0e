// What a stage and its devices on other nodes say to each other, as Cap'n Proto bytes
// (messages/codec_device.cpp): the rows of an op and their answer, and the all-reduce of the
// stage's gradients.
#include "actors/wire_format.hpp"

#include "actors/device_messages.hpp"
#include "actors/wire_load.hpp"
#include "messages/codec.hpp"

namespace deepcee::actors {

namespace {

namespace wire = deepcee::messages;
using detail::load;

} // namespace

std::vector<uint8_t> to_wire(const device_rows& x) {
  return wire::encode(wire::device_rows{x.kind, x.micro, x.first_sample, x.samples, x.loss_scale,
                                        x.tokens, x.targets, x.input, x.output_values});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, device_rows& x) {
  return load(bytes, wire::decode_device_rows, [&](wire::device_rows m) {
    x.kind = m.kind;
    x.micro = m.micro_batch;
    x.first_sample = m.first_sample;
    x.samples = m.samples;
    x.loss_scale = m.loss_scale;
    x.tokens = std::move(m.tokens);
    x.targets = std::move(m.targets);
    x.input = std::move(m.input);
    x.output_values = m.output_values;
  });
}

std::vector<uint8_t> to_wire(const device_output& x) {
  return wire::encode(wire::device_output{x.loss, x.output});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, device_output& x) {
  return load(bytes, wire::decode_device_output, [&](wire::device_output m) {
    x.loss = m.loss;
    x.output = std::move(m.output);
  });
}

std::vector<uint8_t> to_wire(const ring_chunk& x) {
  return wire::encode(wire::ring_chunk{x.step, x.round, x.values});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, ring_chunk& x) {
  return load(bytes, wire::decode_ring_chunk, [&](wire::ring_chunk m) {
    x.step = m.step;
    x.round = m.round;
    x.values = std::move(m.values);
  });
}

std::vector<uint8_t> to_wire(const gradient_values& x) {
  return wire::encode(wire::gradient_values{x.step, x.values, x.offset});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, gradient_values& x) {
  return load(bytes, wire::decode_gradient_values, [&](wire::gradient_values m) {
    x.step = m.step;
    x.values = std::move(m.values);
    x.offset = m.offset;
  });
}

} // namespace deepcee::actors
