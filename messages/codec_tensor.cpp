// Activations and gradients: the one message whose size matters. The send path writes the
// payload once, straight into the wire buffer; the receive path reads it in place.
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <cstring>
#include <stdexcept>

namespace deepcee::messages {

using detail::checker;

namespace {

constexpr size_t max_rank = 8;

static_assert(unsigned(wire::DType::INT8) == unsigned(tensor_dtype::int8));
static_assert(unsigned(wire::TensorKind::GRADIENT_SHARE) == unsigned(tensor_kind::gradient_share));

/// The payload size the header implies, or -1 for a shape that is no tensor.
int64_t expected_payload(const tensor_header& h) {
  if (h.shape.empty() || h.shape.size() > max_rank)
    return -1;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < h.shape.size(); ++i)
    if (h.shape[i] < 0 || __builtin_mul_overflow(rows, h.shape[i], &rows))
      return -1;
  return payload_bytes(h.dtype, rows, h.shape.back());
}

int64_t checked_payload(const tensor_header& h, size_t have, const char* who) {
  const int64_t want = expected_payload(h);
  if (want < 0 || want > max_payload_bytes || static_cast<size_t>(want) != have)
    throw std::invalid_argument(std::string(who) + ": a " + std::string(to_string(h.dtype)) +
                                " tensor of rank " + std::to_string(h.shape.size()) +
                                " cannot carry " + std::to_string(have) + " bytes (expected " +
                                std::to_string(want) + ", at most " +
                                std::to_string(max_payload_bytes) + ")");
  return want;
}

/// Header, shape and payload in one segment: Envelope + Tensor are about 10 words.
size_t tensor_words(const tensor_header& h, int64_t payload) {
  return 32 + h.shape.size() + static_cast<size_t>(payload + 7) / 8;
}

void write_header(wire::Tensor::Builder t, const tensor_header& h) {
  t.setKind(static_cast<wire::TensorKind>(h.kind));
  t.setStep(h.step);
  t.setMicroBatch(h.micro_batch);
  t.setPipeline(h.pipeline);
  t.setStage(h.stage);
  t.setFirstSample(h.first_sample);
  t.setSendTime(h.send_time);
  detail::fill_list(t.initShape(h.shape.size()), h.shape);
  t.setDtype(static_cast<wire::DType>(h.dtype));
  t.setArrivalTime(h.arrival_time);
  t.setFirstLayer(h.first_layer);
  t.setLastLayer(h.last_layer);
  t.setDeliverAt(h.deliver_at_ns);
}

/// `header_only`: the message must carry no payload (dry mode), else exactly the header's.
result<tensor_message> read_tensor(const result<detail::word_buffer>& in, bool header_only) {
  const auto kind = message_kind::tensor;
  return detail::read<
      tensor_message>(in, kind, [&](wire::Envelope::Reader e) -> result<tensor_message> {
    const auto t = e.getTensor();
    checker c(kind);
    c.known(t.getKind(), wire::TensorKind::GRADIENT_SHARE, "kind");
    c.known(t.getDtype(), wire::DType::INT8, "dtype");
    const auto shape = t.getShape();
    c.require(shape.size() >= 1 && shape.size() <= max_rank, "shape",
              "has rank " + std::to_string(shape.size()) + ", not 1 to 8");
    if (c.failed())
      return c.finish(tensor_message{});

    tensor_message m;
    auto& h = m.header;
    h.kind = static_cast<tensor_kind>(t.getKind());
    h.step = t.getStep();
    h.micro_batch = t.getMicroBatch();
    h.pipeline = t.getPipeline();
    h.stage = t.getStage();
    h.first_sample = t.getFirstSample();
    h.send_time = t.getSendTime();
    h.shape = detail::to_vector<int64_t>(shape);
    h.dtype = static_cast<tensor_dtype>(t.getDtype());
    h.arrival_time = t.getArrivalTime();
    h.first_layer = t.getFirstLayer();
    h.last_layer = t.getLastLayer();
    h.deliver_at_ns = t.getDeliverAt();
    c.non_negative(h.step, "step");
    c.non_negative(h.deliver_at_ns, "deliver_at");
    c.non_negative(h.micro_batch, "micro_batch");
    c.non_negative(h.pipeline, "pipeline");
    c.non_negative(h.stage, "stage");
    c.non_negative(h.first_sample, "first_sample");
    c.time(h.send_time, "send_time");
    // Zero: a sender without a link model. Otherwise a transfer arrives after it is sent.
    c.require(std::isfinite(h.arrival_time) && h.arrival_time >= 0.0 &&
                  (h.arrival_time == 0.0 || h.arrival_time >= h.send_time),
              "arrival_time", "is not a finite time at or after send_time");
    if (h.kind == tensor_kind::gradient_share) {
      c.non_negative(h.first_layer, "first_layer");
      c.require(h.last_layer > h.first_layer, "last_layer", "is not after first_layer");
      c.require(h.shape.size() == 1, "shape", "of a gradient share is not rank 1");
    } else {
      c.require(h.first_layer == 0 && h.last_layer == 0, "first_layer",
                "is set on an activation or gradient");
    }
    for (size_t i = 0; i < h.shape.size(); ++i)
      c.non_negative(h.shape[i], "shape[" + std::to_string(i) + "]");

    const auto data = t.getPayload();
    const int64_t want = expected_payload(h);
    c.require(want >= 0, "shape", "overflows");
    if (header_only)
      c.require(data.size() == 0, "payload",
                "has " + std::to_string(data.size()) + " bytes, a header-only tensor none");
    else
      c.require(want < 0 || static_cast<size_t>(want) == data.size(), "payload",
                "has " + std::to_string(data.size()) + " bytes, the " +
                    std::string(to_string(h.dtype)) + " shape needs " + std::to_string(want));
    if (c.failed())
      return c.finish(std::move(m));
    if (h.dtype == tensor_dtype::int8 && !header_only) // a header-only tensor has no scales
      for (int64_t r = 0; r < h.rows(); ++r) {
        float scale;
        std::memcpy(&scale, data.begin() + r * sizeof(float), sizeof(float));
        if (scale < 0.0f) {
          c.require(false, "payload", "has a negative int8 scale in row " + std::to_string(r));
          break;
        }
      }
    m.payload = std::span<const uint8_t>(data.begin(), data.size());
    const auto words = in->words.asBytes();
    m.buffer = received_buffer{in->owner, std::span<const uint8_t>(words.begin(), words.size())};
    return c.finish(std::move(m));
  });
}

} // namespace

std::vector<uint8_t> encode(const tensor_message& m) {
  const int64_t n = checked_payload(m.header, m.payload.size(), "encode(tensor_message)");
  return detail::build(tensor_words(m.header, n), [&](wire::Envelope::Builder e) {
    auto t = e.initTensor();
    write_header(t, m.header);
    auto data = t.initPayload(static_cast<unsigned>(n));
    if (n > 0)
      std::memcpy(data.begin(), m.payload.data(), static_cast<size_t>(n));
  });
}

std::vector<uint8_t> encode_tensor(const tensor_header& header, std::span<const float> values) {
  const int64_t n = expected_payload(header);
  const int64_t rows = header.rows();
  const int64_t cols = header.cols();
  if (n < 0 || n > max_payload_bytes || static_cast<int64_t>(values.size()) != rows * cols)
    throw std::invalid_argument("encode_tensor: " + std::to_string(values.size()) +
                                " values for a rank " + std::to_string(header.shape.size()) +
                                " tensor of " + std::to_string(rows * cols) + " elements (" +
                                std::to_string(n) + " payload bytes)");
  return detail::build(tensor_words(header, n), [&](wire::Envelope::Builder e) {
    auto t = e.initTensor();
    write_header(t, header);
    auto data = t.initPayload(static_cast<unsigned>(n));
    compress(values, rows, cols, header.dtype, std::span<uint8_t>(data.begin(), data.size()));
  });
}

struct tensor_draft::parts {
  explicit parts(size_t words) : builder(words), tensor(nullptr) {}
  detail::envelope_builder builder;
  wire::Tensor::Builder tensor;
};

tensor_draft::tensor_draft(const tensor_header& header) {
  const int64_t n = expected_payload(header);
  if (header.dtype != tensor_dtype::f32 || n < 0 || n > max_payload_bytes)
    throw std::invalid_argument("tensor_draft: a " + std::string(to_string(header.dtype)) +
                                " tensor of rank " + std::to_string(header.shape.size()) +
                                " cannot be written in place (f32 only)");
  parts_ = std::make_unique<parts>(tensor_words(header, n));
  parts_->tensor = parts_->builder.root().initTensor();
  write_header(parts_->tensor, header); // in encode_tensor's order, so the bytes are the same
  auto data = parts_->tensor.initPayload(static_cast<unsigned>(n));
  // A Data field starts on a word boundary, so its bytes are aligned floats.
  payload_ = {reinterpret_cast<float*>(data.begin()), data.size() / sizeof(float)};
}

tensor_draft::~tensor_draft() = default;

std::vector<uint8_t> tensor_draft::finish(double send_time, double arrival_time,
                                          int64_t deliver_at_ns) {
  if (!parts_)
    throw std::logic_error("tensor_draft::finish called twice");
  // Scalars: written in place, the bytes stay those of encode_tensor.
  parts_->tensor.setSendTime(send_time);
  parts_->tensor.setArrivalTime(arrival_time);
  parts_->tensor.setDeliverAt(deliver_at_ns);
  auto bytes = parts_->builder.finish();
  parts_.reset();
  payload_ = {};
  return bytes;
}

std::vector<uint8_t> encode_tensor_header(const tensor_header& header) {
  if (expected_payload(header) < 0)
    throw std::invalid_argument("encode_tensor_header: a rank " +
                                std::to_string(header.shape.size()) + " shape is no tensor");
  return detail::build(tensor_words(header, 0),
                       [&](wire::Envelope::Builder e) { write_header(e.initTensor(), header); });
}

result<tensor_message> decode_tensor(std::span<const uint8_t> bytes) {
  return read_tensor(detail::aligned_copy(bytes), false);
}

result<tensor_message> decode_tensor(std::vector<uint8_t>&& bytes) {
  return read_tensor(detail::adopt(std::move(bytes)), false);
}

result<tensor_message> decode_tensor_header(std::span<const uint8_t> bytes) {
  return read_tensor(detail::aligned_copy(bytes), true);
}

void decompress(const tensor_message& m, std::span<float> out) {
  decompress(m.payload, m.header.rows(), m.header.cols(), m.header.dtype, out);
}

std::vector<uint8_t> encode(const gradient_share& m) {
  tensor_header h;
  h.kind = tensor_kind::gradient_share;
  h.step = m.step;
  h.pipeline = m.pipeline;
  h.stage = m.stage;
  h.first_layer = m.first_layer;
  h.last_layer = m.last_layer;
  h.shape = {static_cast<int64_t>(m.values.size())};
  h.dtype = tensor_dtype::f32; // gradient sums are reduced exactly: never compressed
  h.deliver_at_ns = m.deliver_at_ns;
  return encode_tensor(h, m.values);
}

result<gradient_share> decode_gradient_share(std::span<const uint8_t> bytes) {
  auto r = decode_tensor(bytes);
  if (!r)
    return r.error();
  const auto& h = r->header;
  if (h.kind != tensor_kind::gradient_share)
    return decode_error{
        "tensor: expected a gradient share, got " +
        std::string(h.kind == tensor_kind::activation ? "an activation" : "a gradient")};
  gradient_share m{h.step, h.pipeline, h.stage, h.first_layer, h.last_layer, {}, h.deliver_at_ns};
  m.values.resize(static_cast<size_t>(h.rows() * h.cols()));
  decompress(*r, m.values);
  return m;
}

} // namespace deepcee::messages
