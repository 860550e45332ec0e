#include "actors/stage_tensors.hpp"

#include "messages/codec.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace deepcee::actors {

std::string accept_tensor(stage_state& st, tensor_msg& msg) {
  auto& counts = st.job->counts;
  const auto* received = msg.bytes.data();
  auto decoded = st.job->dry() ? messages::decode_tensor_header(msg.bytes)
                               : messages::decode_tensor(std::move(msg.bytes));
  if (!decoded)
    return decoded.error().what;
  const auto& h = decoded->header;
  const bool forward = msg.role == tensor_role::activation;
  const auto& m = st.job->plan.model;
  const std::vector<int64_t> shape{st.job->plan.micro_batch_size, m.context, m.d_model};
  if ((h.kind == messages::tensor_kind::activation) != forward || h.step != msg.step ||
      h.micro_batch != msg.micro || h.pipeline != st.pipeline || msg.pipeline != st.pipeline ||
      h.stage != msg.stage || h.stage != (forward ? st.stage - 1 : st.stage + 1) ||
      h.first_sample != 0)
    return "header of step " + std::to_string(h.step) + " micro-batch " +
           std::to_string(h.micro_batch) + " from pipeline " + std::to_string(h.pipeline) +
           " stage " + std::to_string(h.stage) + " is not one this stage expects";
  if (h.shape != shape)
    return "tensor of " + std::to_string(h.rows() * h.cols()) + " values, expected " +
           std::to_string(shape[0] * shape[1] * shape[2]);
  msg.decoded = std::move(*decoded);
  if (st.job->dry())
    return {};
  if (msg.decoded.buffer.bytes.data() != received)
    ++counts.payload_copies; // the received bytes were not word aligned
  ++counts.deserializations;
  if (const auto& kept = msg.decoded.header; kept.dtype != messages::tensor_dtype::f32) {
    msg.values.resize(static_cast<size_t>(kept.rows() * kept.cols()));
    messages::decompress(msg.decoded, msg.values);
    ++counts.payload_copies; // the widened values are uploaded once more
  }
  return {};
}

std::span<const float> values_of(const tensor_msg& msg) {
  if (msg.decoded.header.dtype != messages::tensor_dtype::f32)
    return msg.values;
  const auto& p = msg.decoded.payload;
  return {reinterpret_cast<const float*>(p.data()), p.size() / sizeof(float)};
}

void send_tensor(stage_self self, tensor_role role, int micro, double& end_s,
                 const compute_fn& compute) {
  auto& st = self->state;
  auto& counts = st.job->counts;
  const bool forward = role == tensor_role::activation;
  const int to = forward ? st.stage + 1 : st.stage - 1;
  const auto& m = st.job->plan.model;
  messages::tensor_header h;
  h.kind = forward ? messages::tensor_kind::activation : messages::tensor_kind::gradient;
  h.step = st.step;
  h.micro_batch = micro;
  h.pipeline = st.pipeline;
  h.stage = st.stage;
  h.shape = {st.job->plan.micro_batch_size, m.context, m.d_model};
  tensor_msg msg;
  msg.role = role;
  msg.step = st.step;
  msg.pipeline = st.pipeline;
  msg.stage = st.stage;
  msg.micro = micro;
  if (st.job->dry()) {
    h.send_time = end_s;
    msg.bytes = messages::encode_tensor_header(h);
  } else {
    // The one serialization of the send path: the devices write into the payload.
    msg.bytes = messages::encode_tensor_with(h, [&](std::span<float> out) {
      compute(out);
      if (st.job->wall())
        end_s = st.job->real_now_s();
      h.send_time = end_s;
    });
    ++counts.serializations;
  }
  ++counts.messages;
  link_sample meta;
  meta.step = st.step;
  meta.role = static_cast<int32_t>(role);
  meta.micro = micro;
  meta.pipeline = st.pipeline;
  meta.stage = st.stage;
  const auto& parts = forward ? st.costs.act_parts : st.costs.grad_parts;
  const auto peer = st.peers.at(static_cast<size_t>(st.job->flat_index(st.pipeline, to)));
  if (!st.job->wall()) {
    msg.arrival_s = st.links.send(self, parts, end_s, meta);
    self->send(peer, std::move(msg));
  } else if (st.job->mode.shape_links) {
    // The link model's FIFO and drain times, in real seconds: the message leaves when its
    // last part would have arrived, by a timer, so the actor goes on meanwhile.
    const double now = st.job->real_now_s();
    msg.arrival_s = st.links.send(self, parts, now, meta);
    const auto wait = std::chrono::duration<double>(std::max(0.0, msg.arrival_s - now));
    self->delayed_send(peer, std::chrono::duration_cast<std::chrono::microseconds>(wait),
                       std::move(msg));
  } else {
    self->send(peer, std::move(msg)); // the receiver reports the real transfer
  }
}

void report_arrival(stage_self self, tensor_msg& msg) {
  auto& st = self->state;
  msg.arrival_s = st.job->real_now_s();
  const auto& sender = st.job->cluster->stage(msg.pipeline, msg.stage);
  const bool forward = msg.role == tensor_role::activation;
  link_sample meta;
  meta.step = msg.step;
  meta.role = static_cast<int32_t>(msg.role);
  meta.micro = msg.micro;
  meta.pipeline = msg.pipeline;
  meta.stage = msg.stage;
  const double send_s = std::min(msg.decoded.header.send_time, msg.arrival_s);
  st.links.report_real(self, forward ? sender.act_parts : sender.grad_parts,
                       static_cast<double>(msg.decoded.buffer.bytes.size()), send_s, msg.arrival_s,
                       meta);
}

} // namespace deepcee::actors
