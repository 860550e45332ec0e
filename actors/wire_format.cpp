#include "actors/wire_format.hpp"

#include "actors/checkpoint_messages.hpp"
#include "actors/deployment_messages.hpp"
#include "actors/messages.hpp"
#include "actors/pipe_messages.hpp"
#include "actors/wire_load.hpp"
#include "messages/codec.hpp"

#include <caf/message.hpp>
#include <caf/message_view.hpp>
#include <caf/sec.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <stdexcept>

namespace deepcee::actors {

namespace {

namespace wire = deepcee::messages;
using detail::load;
using detail::refuse;

std::atomic<int64_t> dropped{0};

} // namespace

caf::error detail::refuse(const std::string& why) {
  const auto n = ++dropped;
  spdlog::warn("dropped a malformed message from another node ({}); {} so far", why, n);
  return caf::make_error(caf::sec::invalid_argument, why);
}

caf::result<caf::message> drop_unexpected(caf::scheduled_actor*, caf::message_view& x) {
  if (!x.content().empty()) // an empty one was refused in from_wire, and logged there
    spdlog::warn("dropped a message of unexpected type ({} element(s))", x.content().size());
  return caf::message{};
}

int64_t dropped_wire_messages() {
  return dropped.load();
}

std::vector<uint8_t> to_wire(const step_order& x) {
  wire::step_start m;
  m.step = x.step;
  m.micro_batches.assign(x.micro_batches.begin(), x.micro_batches.end());
  m.start_time = x.start_s;
  return wire::encode(m);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, step_order& x) {
  return load(bytes, wire::decode_step_start, [&](wire::step_start m) {
    x.step = m.step;
    x.start_s = m.start_time;
    x.micro_batches.assign(m.micro_batches.begin(), m.micro_batches.end());
  });
}

std::vector<uint8_t> to_wire(const grad_share& x) {
  wire::tensor_header h;
  h.kind = wire::tensor_kind::gradient_share;
  h.step = x.step;
  h.pipeline = x.pipeline;
  h.stage = x.stage;
  h.first_layer = x.first_layer;
  h.last_layer = x.last_layer;
  h.shape = {static_cast<int64_t>(x.values.size())};
  h.dtype = wire::tensor_dtype::f32; // gradient sums are reduced exactly: never compressed
  return wire::encode_tensor(h, x.values);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, grad_share& x) {
  auto r = wire::decode_tensor(std::span<const uint8_t>(bytes));
  if (!r)
    return refuse(r.error().what);
  const auto& h = r->header;
  if (h.kind != wire::tensor_kind::gradient_share)
    return refuse("tensor: expected a gradient share, got " +
                  std::string(h.kind == wire::tensor_kind::activation ? "an activation"
                                                                      : "a gradient"));
  x.step = h.step;
  x.pipeline = h.pipeline;
  x.stage = h.stage;
  x.first_layer = h.first_layer;
  x.last_layer = h.last_layer;
  x.values.resize(static_cast<size_t>(h.rows() * h.cols()));
  wire::decompress(*r, x.values);
  return caf::none;
}

std::vector<uint8_t> to_wire(const stage_report& x) {
  wire::stage_report m;
  m.step = x.step;
  m.pipeline = x.pipeline;
  m.stage = x.stage;
  m.end_time = x.end_s;
  m.loss_sum = x.loss_sum;
  m.grad_sum_squares = x.grad_sum_squares;
  m.ops.reserve(x.ops.size());
  for (const auto& op : x.ops)
    m.ops.push_back({op.kind, op.micro, op.start_s, op.end_s});
  m.dropped = x.dropped;
  m.error = x.error;
  return wire::encode(m);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, stage_report& x) {
  return load(bytes, wire::decode_stage_report, [&](wire::stage_report m) {
    x.step = m.step;
    x.pipeline = m.pipeline;
    x.stage = m.stage;
    x.end_s = m.end_time;
    x.loss_sum = m.loss_sum;
    x.grad_sum_squares = m.grad_sum_squares;
    x.ops.clear();
    x.ops.reserve(m.ops.size());
    for (const auto& op : m.ops)
      x.ops.push_back({op.kind, op.micro_batch, op.start, op.end});
    x.dropped = m.dropped;
    x.error = std::move(m.error);
  });
}

std::vector<uint8_t> to_wire(const optimize_order& x) {
  return wire::encode(wire::optimize_order{x.step, x.lr, x.grad_norm});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, optimize_order& x) {
  return load(bytes, wire::decode_optimize_order, [&](wire::optimize_order m) {
    x.step = m.step;
    x.lr = m.learning_rate;
    x.grad_norm = m.grad_norm;
  });
}

std::vector<uint8_t> to_wire(const link_sample& x) {
  wire::link_sample m;
  m.from = x.from_device;
  m.to = x.to_device;
  m.bytes = std::llround(x.bytes); // a link carries whole bytes
  m.start = x.start_s;
  m.end = x.arrival_s;
  m.step = x.step;
  m.kind = static_cast<wire::tensor_kind>(x.role);
  m.micro_batch = x.micro;
  m.pipeline = x.pipeline;
  m.stage = x.stage;
  m.link = x.link;
  m.send_time = x.send_s;
  m.drained = x.drained_s;
  return wire::encode(m);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, link_sample& x) {
  return load(bytes, wire::decode_link_sample, [&](wire::link_sample m) {
    x.from_device = m.from;
    x.to_device = m.to;
    x.bytes = static_cast<double>(m.bytes);
    x.start_s = m.start;
    x.arrival_s = m.end;
    x.step = m.step;
    x.role = static_cast<int32_t>(m.kind);
    x.micro = m.micro_batch;
    x.pipeline = m.pipeline;
    x.stage = m.stage;
    x.link = m.link;
    x.send_s = m.send_time;
    x.drained_s = m.drained;
  });
}

std::vector<uint8_t> to_wire(const node_join& x) {
  return wire::encode(wire::node_join{x.node, x.job,
                                      std::vector<int>(x.stages.begin(), x.stages.end()),
                                      std::vector<int>(x.devices.begin(), x.devices.end())});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, node_join& x) {
  return load(bytes, wire::decode_node_join, [&](wire::node_join m) {
    x.node = std::move(m.node);
    x.job = std::move(m.job);
    x.stages.assign(m.stages.begin(), m.stages.end());
    x.devices.assign(m.devices.begin(), m.devices.end());
  });
}

std::vector<uint8_t> to_wire(const deployment_request& x) {
  return wire::encode(wire::deployment_request{x.node, x.cluster});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, deployment_request& x) {
  return load(bytes, wire::decode_deployment_request, [&](wire::deployment_request m) {
    x.node = std::move(m.node);
    x.cluster = std::move(m.cluster);
  });
}

static_assert(unsigned(wire::time_mode::dry) == unsigned(runtime::time_mode::dry) &&
              unsigned(wire::time_mode::wall) == unsigned(runtime::time_mode::wall));

std::vector<uint8_t> to_wire(const job_deployment& x) {
  wire::job_deployment m;
  m.job = x.job;
  m.node = x.node;
  m.mode = static_cast<wire::time_mode>(x.time);
  m.shape_links = x.shape_links;
  m.clock_s = x.clock_s;
  m.plan = x.plan;
  m.train = x.train;
  return wire::encode(m);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, job_deployment& x) {
  return load(bytes, wire::decode_job_deployment, [&](wire::job_deployment m) {
    x.job = std::move(m.job);
    x.node = std::move(m.node);
    x.time = static_cast<runtime::time_mode>(m.mode);
    x.shape_links = m.shape_links;
    x.clock_s = m.clock_s;
    x.plan = std::move(m.plan);
    x.train = std::move(m.train);
  });
}

std::vector<uint8_t> to_wire(const heartbeat& x) {
  return wire::encode(wire::heartbeat{x.node, x.sequence, x.time_s});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, heartbeat& x) {
  return load(bytes, wire::decode_heartbeat, [&](wire::heartbeat m) {
    x.node = std::move(m.node);
    x.sequence = m.sequence;
    x.time_s = m.time;
  });
}

std::vector<uint8_t> to_wire(const pipe_request& x) {
  return wire::encode(
      wire::pipe_request{x.step, x.role, x.pipeline, x.stage, x.micro, x.part, x.send_s});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, pipe_request& x) {
  return load(bytes, wire::decode_pipe_request, [&](wire::pipe_request m) {
    x = {m.step, m.role, m.pipeline, m.stage, m.micro_batch, m.part, m.send_time};
  });
}

std::vector<uint8_t> to_wire(const send_horizon& x) {
  return wire::encode(wire::send_horizon{x.step, x.time_s, x.pipeline, x.stage, x.role});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, send_horizon& x) {
  return load(bytes, wire::decode_send_horizon, [&](wire::send_horizon m) {
    x = {m.step, m.time, m.pipeline, m.stage, m.role};
  });
}

std::vector<uint8_t> to_wire(const pipe_arrival& x) {
  return wire::encode(
      wire::pipe_arrival{x.step, x.role, x.pipeline, x.stage, x.micro, x.arrival_s});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, pipe_arrival& x) {
  return load(bytes, wire::decode_pipe_arrival, [&](wire::pipe_arrival m) {
    x = {m.step, m.role, m.pipeline, m.stage, m.micro_batch, m.arrival_time};
  });
}

std::vector<uint8_t> to_wire(const stage_snapshot& x) {
  if (auto why = too_large_to_send(x); !why.empty()) // before copying anything
    throw std::invalid_argument("stage_snapshot: " + why);
  wire::stage_snapshot m{x.step, x.pipeline, x.stage, {}, x.source};
  m.params.reserve(x.params.size());
  for (const auto& p : x.params)
    m.params.push_back({p.name, p.shape, p.value, p.exp_avg, p.exp_avg_sq});
  return wire::encode(m);
}

caf::error from_wire(const std::vector<uint8_t>& bytes, stage_snapshot& x) {
  return load(bytes, wire::decode_stage_snapshot, [&](wire::stage_snapshot m) {
    x.step = m.step;
    x.pipeline = m.pipeline;
    x.stage = m.stage;
    x.source = std::move(m.source);
    x.params.clear();
    x.params.reserve(m.params.size());
    for (auto& p : m.params)
      x.params.push_back({std::move(p.name), std::move(p.shape), std::move(p.value),
                          std::move(p.exp_avg), std::move(p.exp_avg_sq)});
  });
}

std::string too_large_to_send(const stage_snapshot& x) {
  int64_t total = 0;
  for (const auto& p : x.params)
    for (const auto* t : {&p.value, &p.exp_avg, &p.exp_avg_sq}) {
      const auto bytes = static_cast<int64_t>(t->size()) * 4;
      total += bytes;
      if (bytes > wire::max_payload_bytes)
        return "parameter '" + p.name + "' has " + std::to_string(bytes) +
               " bytes, more than one Cap'n Proto message field holds (" +
               std::to_string(wire::max_payload_bytes) + "), so it cannot cross nodes";
    }
  if (total > wire::max_snapshot_bytes)
    return "the stage's parameters have " + std::to_string(total) +
           " bytes, more than one message between nodes carries (" +
           std::to_string(wire::max_snapshot_bytes) + ")";
  return {};
}

caf::error unsendable(const std::exception& e) {
  spdlog::error("cannot send a message to another node: {}", e.what());
  return caf::make_error(caf::sec::invalid_argument, std::string(e.what()));
}

} // namespace deepcee::actors

namespace deepcee::actors {

caf::error stays_in_process(const char* name) {
  const std::string why = std::string("a ") + name + " never leaves its process";
  spdlog::error("cannot send a message to another node: {}", why);
  return caf::make_error(caf::sec::invalid_argument, why);
}

std::vector<uint8_t> to_wire(const node_error& x) {
  return wire::encode(wire::error_report{x.node, wire::error_code::bad_input, x.message});
}

caf::error from_wire(const std::vector<uint8_t>& bytes, node_error& x) {
  return load(bytes, wire::decode_error_report, [&](wire::error_report m) {
    x.node = std::move(m.node);
    x.message = std::move(m.message);
  });
}

} // namespace deepcee::actors
