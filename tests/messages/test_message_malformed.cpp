#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <limits>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

/// Every decoder on the same bytes; none may throw (the test fails if one does).
void decode_with_all(std::span<const uint8_t> b) {
  (void)peek_kind(b);
  (void)decode_job_deployment(b);
  (void)decode_deployment_request(b);
  (void)decode_step_start(b);
  (void)decode_tensor(b);
  (void)decode_link_sample(b);
  (void)decode_step_stats(b);
  (void)decode_rebalance(b);
  (void)decode_heartbeat(b);
  (void)decode_error_report(b);
  (void)decode_optimize_order(b);
  (void)decode_stage_report(b);
  (void)decode_node_join(b);
  (void)decode_pipe_request(b);
  (void)decode_send_horizon(b);
  (void)decode_pipe_arrival(b);
  (void)decode_stage_snapshot(b);
  (void)decode_device_rows(b);
  (void)decode_device_output(b);
  (void)decode_ring_chunk(b);
  (void)decode_gradient_values(b);
  (void)decode_script_update(b);
}

template <class R>
void check_refused(const R& r, const std::string& mentions) {
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST_MESSAGE(r.error().what);
  BOOST_TEST(r.error().what.find(mentions) != std::string::npos,
             "'" << r.error().what << "' should mention '" << mentions << "'");
}

/// Replaces the first little-endian int64 `from` in the encoded bytes by `to`.
std::vector<uint8_t> patched(std::vector<uint8_t> bytes, int64_t from, int64_t to) {
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8)
    if (std::memcmp(bytes.data() + i, &from, 8) == 0) {
      std::memcpy(bytes.data() + i, &to, 8);
      return bytes;
    }
  BOOST_FAIL("marker not found");
  return bytes;
}

} // namespace

BOOST_AUTO_TEST_SUITE(message_malformed)

BOOST_AUTO_TEST_CASE(every_truncation_is_an_error) {
  for (const auto& s : every_kind()) {
    BOOST_TEST_CONTEXT(s.name) {
      BOOST_REQUIRE(s.decodes(s.bytes));
      for (size_t n = 0; n < s.bytes.size(); ++n) {
        const std::span<const uint8_t> cut(s.bytes.data(), n);
        BOOST_TEST(!s.decodes(cut), "decoded " << n << " of " << s.bytes.size() << " bytes");
        decode_with_all(cut);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(trailing_bytes_are_an_error) {
  auto bytes = encode(sample_heartbeat());
  bytes.resize(bytes.size() + 8, 0);
  check_refused(decode_heartbeat(bytes), "after the end");
}

BOOST_AUTO_TEST_CASE(another_kind_is_an_error) {
  check_refused(decode_heartbeat(encode(sample_step_start())),
                "expected heartbeat, got step_start");
  check_refused(decode_tensor(encode(sample_rebalance())), "expected tensor, got rebalance");
}

BOOST_AUTO_TEST_CASE(unknown_message_kind_is_an_error) {
  auto bytes = encode(sample_heartbeat());
  // Word 0 is the segment table, word 1 the root pointer, word 2 the Envelope's data
  // section, whose first 16 bits are the union's discriminant.
  const uint16_t bogus = 99;
  std::memcpy(bytes.data() + 16, &bogus, 2);
  check_refused(decode_heartbeat(bytes), "unknown message kind 99");
  check_refused(peek_kind(bytes), "unknown message kind 99");
}

BOOST_AUTO_TEST_CASE(negative_indices_are_errors) {
  auto link = sample_link_sample();
  link.from = -1;
  check_refused(decode_link_sample(encode(link)), "from is negative");
  auto start = sample_step_start();
  start.step = -3;
  check_refused(decode_step_start(encode(start)), "step is negative");
  start = sample_step_start();
  start.micro_batches[1] = -1;
  check_refused(decode_step_start(encode(start)), "micro_batches[1] is negative");
  auto stats = sample_step_stats();
  stats.stages[1].stage = -1;
  check_refused(decode_step_stats(encode(stats)), "stages[1].stage is negative");
  auto reb = sample_rebalance();
  reb.effective_step = -1;
  check_refused(decode_rebalance(encode(reb)), "effective_step is negative");
  reb = sample_rebalance();
  reb.samples[1][0] = -2;
  check_refused(decode_rebalance(encode(reb)), "samples[1][0] is negative");
  reb = sample_rebalance();
  reb.compressions[2] = static_cast<deepcee::runtime::compression>(7);
  check_refused(decode_rebalance(encode(reb)), "compressions[2] has unknown value 7");
  const std::vector<std::pair<std::string, std::function<void(tensor_header&)>>> fields = {
      {"step", [](tensor_header& h) { h.step = -1; }},
      {"micro_batch", [](tensor_header& h) { h.micro_batch = -1; }},
      {"pipeline", [](tensor_header& h) { h.pipeline = -1; }},
      {"stage", [](tensor_header& h) { h.stage = -1; }},
      {"first_sample", [](tensor_header& h) { h.first_sample = -1; }},
  };
  for (const auto& [name, spoil] : fields) {
    auto h = sample_header();
    spoil(h);
    check_refused(decode_tensor(encode_tensor(h, random_values(120, 3))), name + " is negative");
  }
}

BOOST_AUTO_TEST_CASE(non_finite_times_are_errors) {
  for (double t : {nan_v, inf_v, -1.0}) {
    check_refused(decode_heartbeat(encode(heartbeat{"n", 1, t})), "time");
    check_refused(decode_link_sample(encode(link_sample{0, 1, 8, t, 1.0})), "start");
    auto h = sample_header();
    h.send_time = t;
    check_refused(decode_tensor(encode_tensor(h, random_values(120, 4))), "send_time");
    auto stats = sample_step_stats();
    stats.stages[0].idle = t;
    check_refused(decode_step_stats(encode(stats)), "stages[0].idle");
  }
  check_refused(decode_link_sample(encode(link_sample{0, 1, 8, 2.0, 1.0})), "before start");
  check_refused(decode_step_start(encode(step_start{1, {1}, nan_v})), "learning_rate");
}

BOOST_AUTO_TEST_CASE(runtime_messages_out_of_range_are_errors) {
  auto report = sample_stage_report();
  report.ops[1].end = report.ops[1].start - 1;
  check_refused(decode_stage_report(encode(report)), "ops[1].end is before start");
  report = sample_stage_report();
  report.ops[0].kind = 7;
  check_refused(decode_stage_report(encode(report)), "ops[0].kind is no op kind");
  report = sample_stage_report();
  report.end_time = nan_v;
  check_refused(decode_stage_report(encode(report)), "end_time");
  report = sample_stage_report();
  report.code = static_cast<error_code>(9);
  check_refused(decode_stage_report(encode(report)), "code has unknown value 9");
  auto order = sample_optimize_order();
  order.learning_rate = -1;
  check_refused(decode_optimize_order(encode(order)), "learning_rate");
  auto join = sample_node_join();
  join.stages[2] = -1;
  check_refused(decode_node_join(encode(join)), "stages[2] is negative");
  join = sample_node_join();
  join.devices[1] = -1;
  check_refused(decode_node_join(encode(join)), "devices[1] is negative");
  auto link = sample_link_sample();
  link.drained = link.end + 1;
  check_refused(decode_link_sample(encode(link)), "end is before drained");
  auto h = sample_header();
  h.kind = tensor_kind::gradient_share;
  h.first_layer = 2;
  h.last_layer = 2;
  check_refused(decode_tensor(encode_tensor(h, random_values(120, 5))), "last_layer");
  h = sample_header();
  h.arrival_time = h.send_time / 2;
  check_refused(decode_tensor(encode_tensor(h, random_values(120, 5))), "arrival_time");
  // A valid gradient is no gradient share.
  check_refused(decode_gradient_share(encode_tensor(sample_header(), random_values(120, 5))),
                "expected a gradient share, got a gradient");
}

BOOST_AUTO_TEST_CASE(empty_required_fields_are_errors) {
  check_refused(decode_heartbeat(encode(heartbeat{"", 1, 1.0})), "node is empty");
  check_refused(decode_error_report(encode(error_report{"", error_code::timeout, "x"})),
                "node is empty");
  check_refused(decode_step_start(encode(step_start{1, {}, 0.1})), "micro_batches is empty");
  check_refused(decode_node_join(encode(node_join{"", "job", {0}, {}})), "node is empty");
  check_refused(decode_deployment_request(encode(deployment_request{"", "f00d"})), "node is empty");
  check_refused(decode_deployment_request(encode(deployment_request{"e0", ""})),
                "cluster is empty");
  check_refused(decode_rebalance(encode(rebalance{{}, 1, {}, {}})), "micro_batches is empty");
  namespace rt = deepcee::runtime;
  check_refused(decode_script_update(encode(script_update{-1, {}})), "step is negative");
  check_refused(decode_script_update(
                    encode(script_update{1, rt::link_timeline({}, {{1.0, {}, -2, 2.0, 1}})})),
                "devices[0].device is negative (-2)");
  check_refused(decode_script_update(encode(script_update{
                    1, rt::link_timeline({}, {}, {{1.0, {}, -1, rt::node_action::kill, 1}})})),
                "nodes[0].node is negative (-1)");
}

BOOST_AUTO_TEST_CASE(unknown_enum_values_are_errors) {
  {
    namespace rt = deepcee::runtime;
    auto s = sample_script_update();
    auto nodes = s.script.node_changes();
    nodes[1].action = static_cast<rt::node_action>(7);
    s.script = rt::link_timeline(s.script.changes(), s.script.device_changes(), nodes);
    check_refused(decode_script_update(encode(s)), "nodes[1].action has unknown value 7");
    auto links = sample_script_update().script.changes();
    links[0].b.what = static_cast<rt::link_endpoint::scope>(4);
    check_refused(decode_script_update(encode(script_update{1, rt::link_timeline(links)})),
                  "links[0].b.scope has unknown value 4");
  }
  auto h = sample_header();
  h.dtype = static_cast<tensor_dtype>(7);
  // element_bytes of an unknown dtype is 4, so the sender-side size check passes and the
  // receiver sees the bad enum.
  check_refused(decode_tensor(encode_tensor(h, random_values(120, 5))),
                "dtype has unknown value 7");
  h = sample_header();
  h.kind = static_cast<tensor_kind>(5);
  check_refused(decode_tensor(encode_tensor(h, random_values(120, 5))), "kind has unknown value 5");
  check_refused(decode_error_report(encode(error_report{"n", static_cast<error_code>(9), ""})),
                "code has unknown value 9");
  auto d = sample_deployment();
  d.mode = static_cast<time_mode>(4);
  check_refused(decode_job_deployment(encode(d)), "time_mode has unknown value 4");
  d = sample_deployment();
  d.plan.pipelines[1].schedule = static_cast<deepcee::runtime::schedule_kind>(11);
  check_refused(decode_job_deployment(encode(d)), "plan.pipelines[1].schedule has unknown value");
  d = sample_deployment();
  d.plan.pipelines[0].stages[1].send_compression = static_cast<deepcee::runtime::compression>(6);
  check_refused(decode_job_deployment(encode(d)), "stages[1].send_compression has unknown");
  d = sample_deployment();
  d.clock_s = -1;
  check_refused(decode_job_deployment(encode(d)), "clock is not a time");
  d.clock_s = std::nan("");
  check_refused(decode_job_deployment(encode(d)), "clock is not a time");
}

BOOST_AUTO_TEST_CASE(bad_plans_are_errors) {
  auto d = sample_deployment();
  d.plan.pipelines[0].stages[0].samples = {4};
  check_refused(decode_job_deployment(encode(d)), "one share per device");
  d = sample_deployment();
  d.plan.pipelines[1].stages[0].devices = {-2};
  check_refused(decode_job_deployment(encode(d)), "devices is negative");
  d = sample_deployment();
  d.plan.micro_batch_size = 0;
  check_refused(decode_job_deployment(encode(d)), "micro_batch_size is not positive");
  d = sample_deployment();
  d.plan.pipelines.clear();
  check_refused(decode_job_deployment(encode(d)), "plan.pipelines is empty");
  d = sample_deployment();
  d.plan.model.d_model = 0;
  check_refused(decode_job_deployment(encode(d)), "plan.model");
  d = sample_deployment();
  d.plan.pipelines[0].stages[1].first_layer = 4;
  check_refused(decode_job_deployment(encode(d)), "layer range");
  d = sample_deployment();
  d.train.optimizer.lr = nan_v;
  check_refused(decode_job_deployment(encode(d)), "train.optimizer");
  d = sample_deployment();
  d.train.threads = 0;
  check_refused(decode_job_deployment(encode(d)), "train.threads");
}

BOOST_AUTO_TEST_CASE(shape_that_disagrees_with_payload_is_an_error) {
  // Distinctive dimensions, so that the test can find them on the wire and change them.
  auto h = sample_header(tensor_dtype::f16);
  h.shape = {101, 1234};
  const auto good = encode_tensor(h, random_values(101 * 1234, 6));
  BOOST_REQUIRE(decode_tensor(good).ok());
  check_refused(decode_tensor(patched(good, 1234, 1235)), "payload has 249268 bytes");
  check_refused(decode_tensor(patched(good, 1234, 1233)), "the f16 shape needs 249066");
  check_refused(decode_tensor(patched(good, 1234, -5)), "shape[1] is negative");
  check_refused(decode_tensor(patched(good, 101, -1)), "shape[0] is negative");
  check_refused(decode_tensor(patched(good, 1234, int64_t{1} << 62)), "shape overflows");
  // Dimensions whose product overflows int64.
  const auto wide = patched(good, 101, int64_t{1} << 40);
  check_refused(decode_tensor(patched(wide, 1234, int64_t{1} << 40)), "shape overflows");
}

BOOST_AUTO_TEST_CASE(negative_int8_scale_is_an_error) {
  auto h = sample_header(tensor_dtype::int8);
  h.shape = {2, 4};
  std::vector<uint8_t> payload(payload_bytes(tensor_dtype::int8, 2, 4));
  const float scales[2] = {0.5f, -0.25f};
  std::memcpy(payload.data(), scales, sizeof(scales));
  check_refused(decode_tensor(encode(tensor_message{h, payload, {}})),
                "negative int8 scale in row 1");
}

BOOST_AUTO_TEST_CASE(inconsistent_tensor_is_refused_by_the_sender) {
  auto h = sample_header();
  std::vector<uint8_t> payload(10);
  BOOST_CHECK_THROW(encode(tensor_message{h, payload, {}}), std::invalid_argument);
  BOOST_CHECK_THROW(encode_tensor(h, random_values(7, 1)), std::invalid_argument);
  h.shape = {};
  BOOST_CHECK_THROW(encode_tensor(h, random_values(1, 1)), std::invalid_argument);
  h.shape = std::vector<int64_t>(9, 1);
  BOOST_CHECK_THROW(encode_tensor(h, random_values(1, 1)), std::invalid_argument);
  h.shape = {int64_t{1} << 28, 2}; // 2^31 bytes of f32: over Cap'n Proto's Data limit
  BOOST_CHECK_THROW(encode(tensor_message{h, payload, {}}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(random_bytes_never_crash) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 200);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> b(length(rng));
    for (auto& x : b)
      x = static_cast<uint8_t>(byte(rng));
    // Half of them get a plausible one-segment table, so the reader gets past the framing.
    if (i % 2 == 0 && b.size() >= 16) {
      b.resize(b.size() / 8 * 8);
      const uint32_t table[2] = {0, static_cast<uint32_t>(b.size() / 8 - 1)};
      std::memcpy(b.data(), table, 8);
    }
    decode_with_all(b);
  }
}

BOOST_AUTO_TEST_CASE(mutated_messages_never_crash) {
  std::mt19937 rng(7);
  for (const auto& s : every_kind()) {
    std::uniform_int_distribution<size_t> at(0, s.bytes.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 1000; ++i) {
      auto b = s.bytes;
      const int flips = 1 + i % 4;
      for (int f = 0; f < flips; ++f)
        b[at(rng)] = static_cast<uint8_t>(byte(rng));
      decode_with_all(b);
      (void)decode_tensor(std::vector<uint8_t>(b));
    }
  }
}

BOOST_AUTO_TEST_CASE(sizes_that_are_no_message_are_errors) {
  const std::vector<uint8_t> empty;
  check_refused(decode_heartbeat(empty), "not a whole number");
  const std::vector<uint8_t> odd(13, 0);
  check_refused(decode_tensor(odd), "not a whole number");
  check_refused(decode_tensor(std::vector<uint8_t>(13, 0)), "not a whole number");
  const std::vector<uint8_t> zeros(64, 0);
  decode_with_all(zeros);
}

BOOST_AUTO_TEST_SUITE_END()
