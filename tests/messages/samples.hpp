#pragma once

// Sample messages shared by the suites of test_messages.

#include "messages/codec.hpp"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace deepcee::messages::testing {

inline job_deployment sample_deployment() {
  job_deployment d;
  d.job = "cee-small";
  d.node = "edge-1";
  d.mode = time_mode::virtual_time;
  d.clock_s = 2.75;
  d.running = true;
  d.boot_id = "3f6c2a9e-boot";
  d.epoch_ns = 123'456'789'012;
  auto& p = d.plan;
  p.strategy = "deepcee";
  p.model_name = "small";
  p.model = runtime::model_config{2, 64, 4, 32, 256};
  p.micro_batch_size = 4;
  runtime::pipeline_plan a;
  a.micro_batches = 3;
  a.schedule = runtime::schedule_kind::zb_h1;
  a.stages.push_back({{0, 1}, {3, 1}, 0, 2, runtime::compression::int8});
  a.stages.push_back({{2}, {4}, 2, 4, runtime::compression::none});
  runtime::pipeline_plan b;
  b.micro_batches = 2;
  b.schedule = runtime::schedule_kind::greedy;
  b.stages.push_back({{3}, {4}, 0, 1, runtime::compression::bf16});
  b.stages.push_back({{4}, {4}, 1, 4, runtime::compression::fp16});
  p.pipelines = {a, b};
  p.excluded.push_back({5, "link to cloud 100 Mbps cannot feed it"});
  d.train.model = p.model;
  d.train.optimizer.lr = 1e-3;
  d.train.optimizer.warmup_steps = 7;
  d.train.data.path = "/data/corpus.txt";
  d.train.data.val_fraction = 0.1;
  d.train.batch = 20;
  d.train.steps = 30;
  d.train.seed = 0xDEADBEEFCAFEull;
  d.train.device = "cuda";
  d.train.bf16 = true;
  d.train.threads = 2;
  d.train.eval_every = 5;
  d.train.eval_batches = 3;
  d.train.checkpoint_every = 10;
  d.train.out = "runs/x";
  d.train.metrics_format = "jsonl";
  d.shape_links = true;
  return d;
}

/// The refusal of a failed result, for test messages.
template <class T>
std::string why(const result<T>& r) {
  return r.ok() ? std::string() : r.error().what;
}

inline step_start sample_step_start() {
  return {12, {3, 2, 0}, 2.5e-4, 31.5};
}
inline link_sample sample_link_sample() {
  return {1, 4, 1 << 20, 10.25, 10.75, 12, tensor_kind::gradient, 3, 1, 2, 5, 10.0, 10.5};
}
inline optimize_order sample_optimize_order() {
  return {12, 2.5e-4, 0.75};
}
inline stage_report sample_stage_report() {
  return {12, 1, 2, 33.25, 41.5, 0.125, {{0, 0, 31.5, 32.0}, {1, 0, 32.5, 33.0}}, 3, ""};
}
inline deployment_request sample_deployment_request() {
  return {"edge-1", "9c1f0e2d3b4a5968"};
}
inline node_join sample_node_join() {
  return {"edge-1", "00ab12cd34ef5678", {3, 4, 7}, {5, 0}};
}
inline step_stats sample_step_stats() {
  return {12,
          {{0, 0, 1.5, 0.25, 4096, 1 << 30, 0.0, 0}, {0, 1, 1.25, 0.5, 2048, 1 << 29, 41.5, 4096}}};
}
inline rebalance sample_rebalance() {
  return {{4, 1},
          13,
          {{1, 1}, {2}, {2}},
          {runtime::compression::none, runtime::compression::fp16, runtime::compression::int8}};
}
/// Every kind of event and every optional quantity, a step event among them.
inline script_update sample_script_update() {
  using namespace deepcee::runtime;
  using scope = link_endpoint::scope;
  link_change drop;
  drop.at_s = 2.5;
  drop.a = {scope::region, 0};
  drop.b = {scope::region, 1};
  drop.bandwidth_scale = 0.1;
  drop.line = 3;
  link_change noisy;
  noisy.at_s = 4.0;
  noisy.a = {scope::node, 2};
  noisy.any_peer = true;
  noisy.bandwidth_Bps = 1.25e6;
  noisy.latency_s = 0.08;
  noisy.jitter = 0.2;
  noisy.seed = 0xfeedfacecafebeefULL;
  link_change later;
  later.at_step = 9;
  later.a = {scope::device, 5};
  later.b = {scope::device, 1};
  later.latency_scale = 5;
  return {7, link_timeline({drop, noisy, later}, {{3.25, {}, 4, 3.0, 11}, {0.0, 12, 4, 1.0, 14}},
                           {{5.0, {}, 1, node_action::stop, 17},
                            {6.5, {}, 1, node_action::resume, 20},
                            {7.0, {}, 0, node_action::partition, 23},
                            {8.0, {}, 0, node_action::heal, 26}})};
}
inline heartbeat sample_heartbeat() {
  return {"cloud-0", 77, 123.5};
}
inline error_report sample_error() {
  return {"end-2", error_code::peer_down, "edge-1 disconnected during step 12"};
}

/// Two parameters of a stage, the second without moments (a checkpoint file without them).
inline stage_snapshot sample_stage_snapshot() {
  return {12,
          1,
          2,
          {{"transformer.h.3.ln_1.weight",
            {4},
            {1.0f, -0.5f, 0.25f, 3.0e-8f},
            {0.125f, 0.0f, -1.0f, 2.0f},
            {1.0e-6f, 0.0f, 4.0f, 0.5f}},
           {"transformer.h.3.attn.c_attn.weight", {2, 3}, {1, 2, 3, 4, 5, 6}, {}, {}}},
          "runs/a/checkpoint_12.safetensors"};
}

inline tensor_header sample_header(tensor_dtype d = tensor_dtype::f32) {
  tensor_header h;
  h.kind = tensor_kind::gradient;
  h.step = 12;
  h.micro_batch = 2;
  h.pipeline = 1;
  h.stage = 2;
  h.first_sample = 1;
  h.send_time = 3.75;
  h.arrival_time = 4.25;
  h.shape = {3, 5, 8};
  h.dtype = d;
  return h;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

/// The F of the first and last stage at once (tokens and targets) on 2 samples of T = 3,
/// C = 4, with activations in: every field of a device_rows used.
inline device_rows sample_device_rows() {
  return {0,
          3,
          6,
          2,
          1.0f / 96,
          {11, 0, 250, 7, 7, 1},
          {0, 250, 7, 7, 1, 12},
          random_values(2 * 3 * 4, 21),
          2 * 3 * 4};
}
inline device_output sample_device_output() {
  return {41.375, random_values(2 * 3 * 4, 22)};
}
inline ring_chunk sample_ring_chunk() {
  return {12, 3, random_values(5, 23)};
}
inline gradient_values sample_gradient_values() {
  return {12, random_values(7, 24)};
}

/// One encoded sample of every message kind, with the decoder that accepts it.
struct encoded_sample {
  std::string name;
  std::vector<uint8_t> bytes;
  std::function<bool(std::span<const uint8_t>)> decodes; ///< true when decoding succeeded
};

inline std::vector<encoded_sample> every_kind() {
  const auto values = random_values(3 * 5 * 8, 1);
  return {
      {"job_deployment", encode(sample_deployment()),
       [](auto b) { return decode_job_deployment(b).ok(); }},
      {"step_start", encode(sample_step_start()), [](auto b) { return decode_step_start(b).ok(); }},
      {"tensor", encode_tensor(sample_header(tensor_dtype::int8), values),
       [](auto b) { return decode_tensor(b).ok(); }},
      {"link_sample", encode(sample_link_sample()),
       [](auto b) { return decode_link_sample(b).ok(); }},
      {"step_stats", encode(sample_step_stats()), [](auto b) { return decode_step_stats(b).ok(); }},
      {"rebalance", encode(sample_rebalance()), [](auto b) { return decode_rebalance(b).ok(); }},
      {"heartbeat", encode(sample_heartbeat()), [](auto b) { return decode_heartbeat(b).ok(); }},
      {"error", encode(sample_error()), [](auto b) { return decode_error_report(b).ok(); }},
      {"optimize_order", encode(sample_optimize_order()),
       [](auto b) { return decode_optimize_order(b).ok(); }},
      {"stage_report", encode(sample_stage_report()),
       [](auto b) { return decode_stage_report(b).ok(); }},
      {"node_join", encode(sample_node_join()), [](auto b) { return decode_node_join(b).ok(); }},
      {"deployment_request", encode(sample_deployment_request()),
       [](auto b) { return decode_deployment_request(b).ok(); }},
      {"stage_snapshot", encode(sample_stage_snapshot()),
       [](auto b) { return decode_stage_snapshot(b).ok(); }},
      {"device_rows", encode(sample_device_rows()),
       [](auto b) { return decode_device_rows(b).ok(); }},
      {"device_output", encode(sample_device_output()),
       [](auto b) { return decode_device_output(b).ok(); }},
      {"ring_chunk", encode(sample_ring_chunk()), [](auto b) { return decode_ring_chunk(b).ok(); }},
      {"gradient_values", encode(sample_gradient_values()),
       [](auto b) { return decode_gradient_values(b).ok(); }},
      {"script_update", encode(sample_script_update()),
       [](auto b) { return decode_script_update(b).ok(); }},
  };
}

} // namespace deepcee::messages::testing
