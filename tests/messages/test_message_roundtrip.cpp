#include "samples.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;
namespace rt = deepcee::runtime;

namespace {

void check_same_plan(const rt::plan& a, const rt::plan& b) {
  BOOST_TEST(a.strategy == b.strategy);
  BOOST_TEST(a.model_name == b.model_name);
  BOOST_TEST(a.model.n_layer == b.model.n_layer);
  BOOST_TEST(a.model.d_model == b.model.d_model);
  BOOST_TEST(a.model.n_head == b.model.n_head);
  BOOST_TEST(a.model.context == b.model.context);
  BOOST_TEST(a.model.vocab == b.model.vocab);
  BOOST_TEST(a.micro_batch_size == b.micro_batch_size);
  BOOST_REQUIRE_EQUAL(a.pipelines.size(), b.pipelines.size());
  for (size_t i = 0; i < a.pipelines.size(); ++i) {
    const auto& pa = a.pipelines[i];
    const auto& pb = b.pipelines[i];
    BOOST_TEST(pa.micro_batches == pb.micro_batches);
    BOOST_TEST((pa.schedule == pb.schedule));
    BOOST_REQUIRE_EQUAL(pa.stages.size(), pb.stages.size());
    for (size_t s = 0; s < pa.stages.size(); ++s) {
      BOOST_TEST(pa.stages[s].devices == pb.stages[s].devices);
      BOOST_TEST(pa.stages[s].samples == pb.stages[s].samples);
      BOOST_TEST(pa.stages[s].first_layer == pb.stages[s].first_layer);
      BOOST_TEST(pa.stages[s].last_layer == pb.stages[s].last_layer);
      BOOST_TEST((pa.stages[s].send_compression == pb.stages[s].send_compression));
    }
  }
  BOOST_REQUIRE_EQUAL(a.excluded.size(), b.excluded.size());
  for (size_t i = 0; i < a.excluded.size(); ++i) {
    BOOST_TEST(a.excluded[i].device == b.excluded[i].device);
    BOOST_TEST(a.excluded[i].reason == b.excluded[i].reason);
  }
}

void check_same_train(const rt::train_config& a, const rt::train_config& b) {
  BOOST_TEST(a.optimizer.lr == b.optimizer.lr);
  BOOST_TEST(a.optimizer.min_lr_ratio == b.optimizer.min_lr_ratio);
  BOOST_TEST(a.optimizer.warmup_steps == b.optimizer.warmup_steps);
  BOOST_TEST(a.optimizer.beta1 == b.optimizer.beta1);
  BOOST_TEST(a.optimizer.beta2 == b.optimizer.beta2);
  BOOST_TEST(a.optimizer.eps == b.optimizer.eps);
  BOOST_TEST(a.optimizer.weight_decay == b.optimizer.weight_decay);
  BOOST_TEST(a.optimizer.grad_clip == b.optimizer.grad_clip);
  BOOST_TEST(a.data.path == b.data.path);
  BOOST_TEST(a.data.val_fraction == b.data.val_fraction);
  BOOST_TEST(a.batch == b.batch);
  BOOST_TEST(a.steps == b.steps);
  BOOST_TEST(a.seed == b.seed);
  BOOST_TEST(a.device == b.device);
  BOOST_TEST(a.bf16 == b.bf16);
  BOOST_TEST(a.threads == b.threads);
  BOOST_TEST(a.eval_every == b.eval_every);
  BOOST_TEST(a.eval_batches == b.eval_batches);
  BOOST_TEST(a.checkpoint_every == b.checkpoint_every);
  BOOST_TEST(a.out == b.out);
  BOOST_TEST(a.metrics_format == b.metrics_format);
}

template <class T, class Decode>
void check_round_trip(const T& value, Decode decode) {
  const auto bytes = encode(value);
  const auto back = decode(bytes);
  BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
  BOOST_TEST((*back == value));
}

} // namespace

BOOST_AUTO_TEST_SUITE(message_roundtrip)

BOOST_AUTO_TEST_CASE(job_deployment_keeps_plan_and_settings) {
  const auto d = sample_deployment();
  const auto back = decode_job_deployment(encode(d));
  BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
  BOOST_TEST(back->job == d.job);
  BOOST_TEST(back->node == d.node);
  BOOST_TEST((back->mode == d.mode));
  BOOST_TEST(back->shape_links == d.shape_links);
  BOOST_TEST(back->clock_s == d.clock_s);
  BOOST_TEST(back->running == d.running);
  BOOST_TEST(back->boot_id == d.boot_id);
  BOOST_TEST(back->epoch_ns == d.epoch_ns);
  check_same_plan(back->plan, d.plan);
  check_same_train(back->train, d.train);
  // The model travels once, in the plan.
  BOOST_TEST(back->train.model.d_model == d.plan.model.d_model);
  BOOST_TEST(back->train.model.n_layer == d.plan.model.n_layer);
}

BOOST_AUTO_TEST_CASE(every_time_mode_round_trips) {
  for (auto mode : {time_mode::wall, time_mode::virtual_time, time_mode::dry}) {
    auto d = sample_deployment();
    d.mode = mode;
    const auto back = decode_job_deployment(encode(d));
    BOOST_REQUIRE(back.ok());
    BOOST_TEST((back->mode == mode));
  }
}

BOOST_AUTO_TEST_CASE(control_messages_round_trip) {
  check_round_trip(sample_step_start(), [](auto b) { return decode_step_start(b); });
  check_round_trip(sample_link_sample(), [](auto b) { return decode_link_sample(b); });
  check_round_trip(sample_step_stats(), [](auto b) { return decode_step_stats(b); });
  check_round_trip(sample_rebalance(), [](auto b) { return decode_rebalance(b); });
  check_round_trip(sample_script_update(), [](auto b) { return decode_script_update(b); });
  check_round_trip(script_update{}, [](auto b) { return decode_script_update(b); });
  check_round_trip(sample_heartbeat(), [](auto b) { return decode_heartbeat(b); });
  check_round_trip(sample_error(), [](auto b) { return decode_error_report(b); });
  check_round_trip(sample_optimize_order(), [](auto b) { return decode_optimize_order(b); });
  check_round_trip(sample_stage_report(), [](auto b) { return decode_stage_report(b); });
  check_round_trip(sample_node_join(), [](auto b) { return decode_node_join(b); });
  check_round_trip(sample_deployment_request(),
                   [](auto b) { return decode_deployment_request(b); });
  check_round_trip(pipe_request{3, 1, 1, 2, 5, 0, 0.25},
                   [](auto b) { return decode_pipe_request(b); });
  check_round_trip(send_horizon{3, -1.5, 1, 2, 1}, [](auto b) { return decode_send_horizon(b); });
  check_round_trip(pipe_arrival{3, 0, 1, 2, 5, 0.5}, [](auto b) { return decode_pipe_arrival(b); });
  check_round_trip(sample_stage_snapshot(), [](auto b) { return decode_stage_snapshot(b); });
}

BOOST_AUTO_TEST_CASE(extreme_but_valid_values_round_trip) {
  check_round_trip(step_start{0, {0}, 0.0}, [](auto b) { return decode_step_start(b); });
  check_round_trip(heartbeat{"n", ~uint64_t{0}, 1e300}, [](auto b) { return decode_heartbeat(b); });
  check_round_trip(link_sample{0, 0, 0, 5.0, 5.0, 0, tensor_kind::activation, 0, 0, 0, 0, 5.0, 5.0},
                   [](auto b) { return decode_link_sample(b); });
  check_round_trip(step_stats{0, {}}, [](auto b) { return decode_step_stats(b); });
  for (auto code : {error_code::internal, error_code::malformed_message, error_code::bad_input,
                    error_code::peer_down, error_code::timeout})
    check_round_trip(error_report{"n", code, ""}, [](auto b) { return decode_error_report(b); });
}

BOOST_AUTO_TEST_CASE(diverged_loss_is_data_not_an_error) {
  auto s = sample_step_stats();
  s.stages[1].loss_sum = std::numeric_limits<double>::quiet_NaN();
  const auto back = decode_step_stats(encode(s));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST(std::isnan(back->stages[1].loss_sum));
}

BOOST_AUTO_TEST_CASE(error_text_stays_one_line) {
  const auto back = decode_error_report(encode(error_report{"n", error_code::internal, "a\nb\rc"}));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST(back->message == "a b c");
}

BOOST_AUTO_TEST_CASE(tensor_of_every_dtype_round_trips) {
  for (auto d : {tensor_dtype::f32, tensor_dtype::f16, tensor_dtype::bf16, tensor_dtype::int8}) {
    const auto h = sample_header(d);
    const auto values = random_values(3 * 5 * 8, 2);
    const auto bytes = encode_tensor(h, values);
    const auto back = decode_tensor(bytes);
    BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
    BOOST_TEST((back->header == h));
    BOOST_TEST(back->payload.size() == size_t(payload_bytes(d, 15, 8)));
    std::vector<float> out(values.size());
    decompress(*back, out);
    std::vector<float> expect(values.size());
    std::vector<uint8_t> direct(payload_bytes(d, 15, 8));
    compress(values, 15, 8, d, direct);
    decompress(direct, 15, 8, d, expect);
    BOOST_TEST(out == expect, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(peek_kind_names_every_kind) {
  for (const auto& s : every_kind()) {
    const auto kind = peek_kind(s.bytes);
    BOOST_REQUIRE(kind.ok());
    BOOST_TEST(std::string(to_string(*kind)) == s.name);
    BOOST_TEST(s.decodes(s.bytes));
  }
}

BOOST_AUTO_TEST_SUITE_END()
