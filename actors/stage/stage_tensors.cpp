#include "actors/stage/stage_tensors.hpp"

#include "messages/codec.hpp"
#include "runtime/step/device_places.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace deepcee::actors {

std::variant<accepted_tensor, std::string> accept_tensor(stage_state& st, tensor_msg& msg) {
  auto& counts = st.job->counts;
  const auto* received = msg.bytes.data();
  auto decoded = st.job->dry() ? messages::decode_tensor_header(msg.bytes)
                               : messages::decode_tensor(std::move(msg.bytes));
  if (!decoded)
    return decoded.error().what;
  const auto& h = decoded->header;
  const bool forward = h.kind == messages::tensor_kind::activation;
  const auto& plan = plan_at(st, h.step);
  const auto& m = plan.model;
  const int micro_batches = plan.pipelines[static_cast<size_t>(st.pipeline)].micro_batches;
  const std::vector<int64_t> shape{plan.micro_batch_size, m.context, m.d_model};
  const auto what = "tensor of step " + std::to_string(h.step) + " micro-batch " +
                    std::to_string(h.micro_batch) + " from pipeline " + std::to_string(h.pipeline) +
                    " stage " + std::to_string(h.stage);
  if (h.kind == messages::tensor_kind::gradient_share || h.pipeline != st.pipeline ||
      h.stage != (forward ? st.stage - 1 : st.stage + 1) || h.first_sample != 0)
    return what + " does not come from a neighbour of this stage";
  // A neighbour runs the same step or, once the optimizer step is done, the next one.
  if (h.step < st.step || h.step > st.step + 1 || h.micro_batch >= micro_batches)
    return what + " belongs to no step or micro-batch of this stage (step " +
           std::to_string(st.step) + ", " + std::to_string(micro_batches) + " micro-batches)";
  if (h.shape != shape)
    return what + " has " + std::to_string(h.rows() * h.cols()) + " values, expected " +
           std::to_string(shape[0] * shape[1] * shape[2]);
  accepted_tensor out;
  out.role = forward ? tensor_role::activation : tensor_role::gradient;
  out.step = h.step;
  out.micro = h.micro_batch;
  out.tensor.arrival_s = h.arrival_time;
  out.tensor.decoded = std::move(*decoded);
  if (st.job->dry())
    return out;
  if (out.tensor.decoded.buffer.bytes.data() != received)
    ++counts.payload_copies; // the received bytes were not word aligned
  ++counts.deserializations;
  if (const auto& kept = out.tensor.decoded.header; kept.dtype != messages::tensor_dtype::f32) {
    out.tensor.values.resize(static_cast<size_t>(kept.rows() * kept.cols()));
    messages::decompress(out.tensor.decoded, out.tensor.values);
    ++counts.payload_copies; // the widened values are uploaded once more
  }
  return out;
}

std::span<const float> values_of(const received_tensor& t) {
  if (t.decoded.header.dtype != messages::tensor_dtype::f32)
    return t.values;
  const auto& p = t.decoded.payload;
  return {reinterpret_cast<const float*>(p.data()), p.size() / sizeof(float)};
}

namespace {

/// The encoding of the tensors between stages `s` and `s + 1` of pipeline `pipeline`, both
/// ways: stage s's send_compression, as the simulator and the link model count their bytes.
messages::tensor_dtype boundary_dtype(const runtime::plan& plan, int pipeline, int s) {
  switch (plan.pipelines[static_cast<size_t>(pipeline)]
              .stages[static_cast<size_t>(s)]
              .send_compression) {
  case runtime::compression::none:
    return messages::tensor_dtype::f32;
  case runtime::compression::fp16:
    return messages::tensor_dtype::f16;
  case runtime::compression::bf16:
    return messages::tensor_dtype::bf16;
  case runtime::compression::int8:
    return messages::tensor_dtype::int8;
  }
  return messages::tensor_dtype::f32;
}

} // namespace

outgoing_tensor open_tensor(const stage_state& st, tensor_role role, int micro) {
  const bool forward = role == tensor_role::activation;
  const auto& m = st.job->plan.model;
  outgoing_tensor t;
  t.role = role;
  auto& h = t.header;
  h.kind = forward ? messages::tensor_kind::activation : messages::tensor_kind::gradient;
  h.step = st.step;
  h.micro_batch = micro;
  h.pipeline = st.pipeline;
  h.stage = st.stage;
  h.shape = {st.job->plan.micro_batch_size, m.context, m.d_model};
  // The devices write fp32 into the draft; a compressed boundary encodes it when it leaves.
  if (!st.job->dry())
    t.draft = std::make_shared<messages::tensor_draft>(h);
  h.dtype = boundary_dtype(st.allocation->plan, st.pipeline, forward ? st.stage : st.stage - 1);
  return t;
}

void send_tensor(stage_self self, outgoing_tensor& t, double end_s) {
  auto& st = self->state;
  auto& counts = st.job->counts;
  const bool forward = t.role == tensor_role::activation;
  const bool wall = st.job->wall(), shaped = st.job->shaping();
  auto& h = t.header;
  link_sample meta;
  meta.step = h.step;
  meta.kind = static_cast<messages::tensor_kind>(t.role);
  meta.micro_batch = h.micro_batch;
  meta.pipeline = st.pipeline;
  meta.stage = st.stage;
  const auto& parts = forward ? st.costs.act_parts : st.costs.grad_parts;
  // The link model's arrival (virtual and dry time through pipe_sync, which hands shared
  // links to their pipes; shaped wall time on the FIFOs of this process's stages, in real
  // seconds). Unshaped wall time leaves it 0: the receiver measures it.
  h.send_time = end_s;
  if (!wall)
    h.arrival_time = st.sync.send(self, st.links, t.role, parts, end_s, meta);
  else if (shaped)
    h.arrival_time = st.links.send(self, st.job->shaped, parts, end_s, meta);
  const int to = forward ? st.stage + 1 : st.stage - 1;
  const int k = st.job->flat_index(st.pipeline, to);
  const auto peer = st.peers.at(static_cast<size_t>(k));
  // Held by the receiver: the real transfer runs inside the modelled time.
  const bool held = shaped && held_by_receiver(self, k);
  if (held)
    h.deliver_at_ns = st.job->steady_ns_at(h.arrival_time);
  tensor_msg msg;
  if (t.draft && h.dtype != messages::tensor_dtype::f32) {
    // Compressed in one pass from the devices' fp32 payload into the message.
    msg.bytes = messages::encode_tensor(h, t.draft->payload());
    t.draft.reset();
    ++counts.serializations;
  } else if (t.draft) {
    // The one serialization of the send path was the devices' own writes into the payload.
    msg.bytes = t.draft->finish(h.send_time, h.arrival_time, h.deliver_at_ns);
    t.draft.reset();
    ++counts.serializations;
  } else {
    msg.bytes = messages::encode_tensor_header(h);
  }
  ++counts.messages;
  if (shaped && !held) {
    // The link model's FIFO and drain times, in real seconds: the message leaves when its
    // last part would have arrived, by a timer, so the actor goes on meanwhile.
    self->delayed_send(peer, wait_of(h.arrival_time - st.job->real_now_s()), std::move(msg));
  } else {
    self->send(peer, std::move(msg));
  }
}

bool held_by_receiver(stage_self self, int k) {
  const auto& st = self->state;
  const auto& layout = st.job->layout;
  const bool one_process = st.peers.at(static_cast<size_t>(k))->node() == self->node();
  const auto here =
      runtime::boot_of_stage(layout, st.job->flat_index(st.pipeline, st.stage), st.boot_ids);
  return runtime::shaping_side_of(one_process, here,
                                  runtime::boot_of_stage(layout, k, st.boot_ids)) ==
         runtime::shaping_side::hold_at_receiver;
}

void report_arrival(stage_self self, accepted_tensor& t, int64_t arrived_ns) {
  auto& st = self->state;
  const auto& h = t.tensor.decoded.header;
  t.tensor.arrival_s = arrived_ns != 0 ? st.job->real_s_at(arrived_ns) : st.job->real_now_s();
  const auto& sender = st.job->cluster->stage(h.pipeline, h.stage);
  const bool forward = t.role == tensor_role::activation;
  link_sample meta;
  meta.step = h.step;
  meta.kind = static_cast<messages::tensor_kind>(t.role);
  meta.micro_batch = h.micro_batch;
  meta.pipeline = h.pipeline;
  meta.stage = h.stage;
  const double send_s = std::min(h.send_time, t.tensor.arrival_s);
  st.links.report_real(self, forward ? sender.act_parts : sender.grad_parts,
                       static_cast<double>(t.tensor.decoded.buffer.bytes.size()), send_s,
                       t.tensor.arrival_s, meta);
}

} // namespace deepcee::actors
