#include "runtime/step/device_rows_check.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

/// A small model: 8 tokens of context, 16 channels, a vocabulary of 50.
model_config small_model() {
  model_config m;
  m.context = 8;
  m.d_model = 16;
  m.vocab = 50;
  return m;
}

/// A request that matches expected_rows for `samples` samples of `kind` on a stage that is
/// first and/or last.
struct request_values {
  std::vector<int32_t> tokens, targets;
  rows_request rows;
};

request_values valid_request(op_kind kind, int samples, bool first, bool last) {
  const auto m = small_model();
  const rows_shape shape = expected_rows(kind, samples, m, first, last);
  request_values v;
  v.tokens.assign(static_cast<size_t>(shape.tokens), 7);
  v.targets.assign(static_cast<size_t>(shape.targets), 49);
  v.rows.kind = kind;
  v.rows.micro = 3;
  v.rows.samples = samples;
  v.rows.output_values = shape.output_values;
  v.rows.tokens = v.tokens;
  v.rows.targets = v.targets;
  return v;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_rows_check)

BOOST_AUTO_TEST_CASE(expected_rows_follow_the_stage_position) {
  const auto m = small_model();
  // A middle stage: F and B write rows of samples * T * C, no tokens or targets.
  auto mid_f = expected_rows(op_kind::forward, 2, m, false, false);
  BOOST_TEST(mid_f.output_values == 2 * 8 * 16);
  BOOST_TEST(mid_f.tokens == 0);
  BOOST_TEST(mid_f.targets == 0);
  BOOST_TEST(expected_rows(op_kind::backward_input, 2, m, false, false).output_values ==
             2 * 8 * 16);
  // W writes nothing anywhere.
  auto w = expected_rows(op_kind::backward_weight, 2, m, true, true);
  BOOST_TEST(w.output_values == 0);
  BOOST_TEST(w.tokens == 0);
  BOOST_TEST(w.targets == 0);
  // The first stage's F reads tokens and writes rows; its B writes nothing (no stage before).
  auto first_f = expected_rows(op_kind::forward, 3, m, true, false);
  BOOST_TEST(first_f.tokens == 3 * 8);
  BOOST_TEST(first_f.targets == 0);
  BOOST_TEST(first_f.output_values == 3 * 8 * 16);
  BOOST_TEST(expected_rows(op_kind::backward_input, 3, m, true, false).output_values == 0);
  // The last stage's F reads targets and writes nothing (the loss ends it); its B writes.
  auto last_f = expected_rows(op_kind::forward, 3, m, false, true);
  BOOST_TEST(last_f.targets == 3 * 8);
  BOOST_TEST(last_f.tokens == 0);
  BOOST_TEST(last_f.output_values == 0);
  BOOST_TEST(expected_rows(op_kind::backward_input, 3, m, false, true).output_values == 3 * 8 * 16);
  // A single stage: F reads both, writes nothing.
  auto only = expected_rows(op_kind::forward, 1, m, true, true);
  BOOST_TEST(only.tokens == 8);
  BOOST_TEST(only.targets == 8);
  BOOST_TEST(only.output_values == 0);
}

BOOST_AUTO_TEST_CASE(a_request_that_matches_is_accepted) {
  const auto m = small_model();
  for (auto kind : {op_kind::forward, op_kind::backward_input, op_kind::backward_weight})
    for (bool first : {false, true})
      for (bool last : {false, true}) {
        auto v = valid_request(kind, 2, first, last);
        BOOST_TEST(device_rows_refusal(v.rows, 2, m, first, last).empty());
      }
}

BOOST_AUTO_TEST_CASE(other_samples_than_the_plans_are_refused) {
  auto v = valid_request(op_kind::forward, 2, false, false);
  const auto why = device_rows_refusal(v.rows, 4, small_model(), false, false);
  BOOST_TEST(why == "device_rows m3: 2 samples, the plan gives this device 4");
}

BOOST_AUTO_TEST_CASE(other_output_values_than_the_op_writes_are_refused) {
  auto v = valid_request(op_kind::forward, 2, false, false);
  v.rows.output_values -= 1;
  BOOST_TEST(device_rows_refusal(v.rows, 2, small_model(), false, false) ==
             "device_rows m3: asks for 255 output values, the op writes 256");
  // The last stage's F writes nothing: asking for rows is refused too.
  auto last = valid_request(op_kind::forward, 2, false, true);
  last.rows.output_values = 256;
  BOOST_TEST(device_rows_refusal(last.rows, 2, small_model(), false, true) ==
             "device_rows m3: asks for 256 output values, the op writes 0");
}

BOOST_AUTO_TEST_CASE(tokens_or_targets_of_another_shape_are_refused) {
  const auto m = small_model();
  auto v = valid_request(op_kind::forward, 2, true, true);
  v.tokens.pop_back();
  v.rows.tokens = v.tokens;
  BOOST_TEST(device_rows_refusal(v.rows, 2, m, true, true) ==
             "device_rows m3: 15 tokens and 16 targets for 2 samples of 8");
  // Targets sent to a stage that is not the last.
  auto mid = valid_request(op_kind::forward, 2, true, false);
  std::vector<int32_t> targets(16, 1);
  mid.rows.targets = targets;
  BOOST_TEST(device_rows_refusal(mid.rows, 2, m, true, false) ==
             "device_rows m3: 16 tokens and 16 targets for 2 samples of 8");
  // A B carries no tokens, even to the first stage.
  auto b = valid_request(op_kind::backward_input, 2, true, false);
  std::vector<int32_t> tokens(16, 1);
  b.rows.tokens = tokens;
  BOOST_TEST(has(device_rows_refusal(b.rows, 2, m, true, false), "16 tokens and 0 targets"));
}

BOOST_AUTO_TEST_CASE(tokens_outside_the_vocabulary_are_refused) {
  const auto m = small_model();
  auto v = valid_request(op_kind::forward, 1, true, true);
  v.tokens[5] = 50; // one past the vocabulary
  BOOST_TEST(device_rows_refusal(v.rows, 1, m, true, true) ==
             "device_rows m3: token 50 outside the vocabulary of 50");
  v.tokens[5] = 0;
  v.targets[2] = -1;
  BOOST_TEST(device_rows_refusal(v.rows, 1, m, true, true) ==
             "device_rows m3: token -1 outside the vocabulary of 50");
  v.targets[2] = 49; // the last id is inside
  BOOST_TEST(device_rows_refusal(v.rows, 1, m, true, true).empty());
}

BOOST_AUTO_TEST_SUITE_END()
