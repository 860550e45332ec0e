#include "runtime/base/errors.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/plan/plan.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

using namespace deepcee::runtime;

namespace {

/// Two pipelines over a 2-layer model (4 pipeline layers), devices 0..4.
plan sample_plan() {
  plan p;
  p.strategy = "deepcee";
  p.model_name = "small";
  p.model = model_config{2, 64, 4, 32, 256};
  p.micro_batch_size = 4;
  pipeline_plan a;
  a.micro_batches = 3;
  a.schedule = schedule_kind::zb_h1;
  a.stages.push_back({{0, 1}, {3, 1}, 0, 2, compression::int8});
  a.stages.push_back({{2}, {4}, 2, 4, compression::none, true}); // recomputes
  pipeline_plan b;
  b.micro_batches = 2;
  b.schedule = schedule_kind::greedy;
  b.stages.push_back({{3}, {4}, 0, 1, compression::bf16});
  b.stages.push_back({{4}, {4}, 1, 4, compression::fp16});
  p.pipelines = {a, b};
  p.excluded.push_back({5, "too slow"});
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

bool same(const plan& x, const plan& y) {
  if (x.strategy != y.strategy || x.model_name != y.model_name ||
      x.micro_batch_size != y.micro_batch_size || x.pipelines.size() != y.pipelines.size() ||
      x.excluded.size() != y.excluded.size() || x.model.n_layer != y.model.n_layer ||
      x.model.d_model != y.model.d_model || x.model.n_head != y.model.n_head ||
      x.model.context != y.model.context || x.model.vocab != y.model.vocab)
    return false;
  for (size_t i = 0; i < x.pipelines.size(); ++i) {
    const auto &a = x.pipelines[i], &b = y.pipelines[i];
    if (a.micro_batches != b.micro_batches || a.schedule != b.schedule ||
        a.stages.size() != b.stages.size())
      return false;
    for (size_t s = 0; s < a.stages.size(); ++s) {
      const auto &u = a.stages[s], &v = b.stages[s];
      if (u.devices != v.devices || u.samples != v.samples || u.first_layer != v.first_layer ||
          u.last_layer != v.last_layer || u.send_compression != v.send_compression ||
          u.recompute != v.recompute)
        return false;
    }
  }
  for (size_t i = 0; i < x.excluded.size(); ++i)
    if (x.excluded[i].device != y.excluded[i].device ||
        x.excluded[i].reason != y.excluded[i].reason)
      return false;
  return true;
}

/// The validation message for a plan changed by `edit`, checked against 6 devices.
std::string invalid(const std::function<void(plan&)>& edit) {
  auto p = sample_plan();
  edit(p);
  return error_of([&] { validate_plan(p, 6, "plan.json"); });
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(plan_format)

BOOST_AUTO_TEST_CASE(global_batch_sums_pipelines) {
  BOOST_TEST(sample_plan().global_batch() == (3 + 2) * 4);
}

BOOST_AUTO_TEST_CASE(json_round_trip) {
  const auto p = sample_plan();
  BOOST_CHECK_NO_THROW(validate_plan(p, 6, "x"));
  const auto text = plan_to_json(p);
  BOOST_TEST(has(text, "\"zb-h1\""));
  BOOST_TEST(has(text, "\"int8\""));
  BOOST_TEST(has(text, "\"recompute\": true"));
  const auto q = plan_from_json(text, "x.json");
  BOOST_TEST(same(p, q));
  BOOST_TEST(plan_to_json(q) == text);
}

BOOST_AUTO_TEST_CASE(save_and_load) {
  const auto dir = std::filesystem::temp_directory_path() / "deepcee_test_plan";
  std::filesystem::create_directories(dir);
  const auto path = dir / "plan.json";
  save_plan(sample_plan(), path);
  BOOST_TEST(!std::filesystem::exists(dir / "plan.json.tmp"));
  BOOST_TEST(same(load_plan(path), sample_plan()));
  std::filesystem::remove_all(dir);
  BOOST_TEST(has(error_of([&] { load_plan(path); }), "plan.json"));
}

BOOST_AUTO_TEST_CASE(validation_errors_name_file_and_stage) {
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines.clear(); }), "no pipeline"));
  BOOST_TEST(has(invalid([](plan& p) { p.micro_batch_size = 0; }), "micro_batch_size"));
  BOOST_TEST(has(invalid([](plan& p) { p.model.n_head = 5; }), "divisible"));
  BOOST_TEST(has(invalid([](plan& p) { p.model.n_layer = 0; }), "positive"));
  BOOST_TEST(
      has(invalid([](plan& p) { p.pipelines[1].micro_batches = 0; }), "pipeline 1: micro_batches"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages.clear(); }), "pipeline 0: no stage"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages[1].first_layer = 1; }),
                 "pipeline 0 stage 1: starts at layer 1"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages[1].last_layer = 2; }),
                 "pipeline 0 stage 1: empty layer range"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages[1].last_layer = 5; }),
                 "pipeline 0 stage 1: ends at layer 5"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages[1].last_layer = 3; }),
                 "pipeline 0: covers layers [0, 3) of 4"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[1].stages[0].devices.clear(); }),
                 "pipeline 1 stage 0: no device"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[0].stages[0].samples = {4}; }),
                 "1 sample shares for 2 devices"));
  BOOST_TEST(has(invalid([](plan& p) {
                   p.pipelines[0].stages[0].samples = {4, 0};
                 }),
                 "at least 1 sample"));
  BOOST_TEST(has(invalid([](plan& p) {
                   p.pipelines[0].stages[0].samples = {2, 1};
                 }),
                 "shares sum to 3"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[1].stages[1].devices = {7}; }),
                 "pipeline 1 stage 1: device 7 does not exist"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[1].stages[1].devices = {-1}; }),
                 "device -1 does not exist"));
  BOOST_TEST(has(invalid([](plan& p) { p.pipelines[1].stages[1].devices = {0}; }),
                 "device 0 already serves pipeline 0 stage 0"));
  BOOST_TEST(has(invalid([](plan& p) { p.excluded[0].device = 2; }), "also serves"));
  BOOST_TEST(has(invalid([](plan& p) { p.excluded[0].device = 9; }), "does not exist"));
  BOOST_TEST(invalid([](plan&) {}).empty());
  BOOST_TEST(has(invalid([](plan& p) { p.micro_batch_size = 0; }), "plan.json: "));
}

BOOST_AUTO_TEST_CASE(json_errors_name_the_path) {
  const auto bad = [](const std::string& text) {
    return error_of([&] { plan_from_json(text, "p.json"); });
  };
  BOOST_TEST(has(bad("{"), "p.json: not valid JSON"));
  BOOST_TEST(has(bad("[]"), "expected a JSON object"));
  auto text = plan_to_json(sample_plan());
  const auto replaced = [&](const std::string& from, const std::string& to) {
    auto t = text;
    t.replace(t.find(from), from.size(), to);
    return bad(t);
  };
  BOOST_TEST(has(replaced("\"zb-h1\"", "\"zb-h9\""), "pipelines[0].schedule: unknown schedule"));
  BOOST_TEST(has(replaced("\"int8\"", "\"int4\""),
                 "pipelines[0].stages[0].send_compression: unknown compression \"int4\""));
  BOOST_TEST(has(replaced("\"micro_batch_size\": 4", "\"micro_batch_size\": \"4\""),
                 "plan.micro_batch_size: expected an integer"));
  BOOST_TEST(has(replaced("\"n_layer\"", "\"layers\""), "model: missing \"n_layer\""));
  BOOST_TEST(has(replaced("\"version\": 1", "\"version\": 2"), "unsupported plan version 2"));
  BOOST_TEST(has(replaced("\"deepcee-plan\"", "\"other\""), "not a deepcee plan"));
  BOOST_TEST(has(replaced("\"samples\": [\n", "\"samples\": [\"a\",\n"),
                 "pipelines[0].stages[0].samples[0]: expected an integer"));
  BOOST_TEST(has(replaced("\"recompute\": true", "\"recompute\": 1"),
                 "pipelines[0].stages[1].recompute: expected true or false"));
  // Validation runs on load too.
  BOOST_TEST(has(replaced("\"micro_batches\": 3", "\"micro_batches\": 0"), "micro_batches"));
}

BOOST_AUTO_TEST_CASE(a_plan_without_recompute_keys_reads_as_no_recomputation) {
  // Plans written before recomputation existed have no "recompute": they read as false,
  // and a plan without recomputing stages is written without the key.
  plan p = sample_plan();
  p.pipelines[0].stages[1].recompute = false;
  const auto text = plan_to_json(p);
  BOOST_TEST(!has(text, "recompute"));
  const auto q = plan_from_json(text, "old.json");
  for (const auto& pp : q.pipelines)
    for (const auto& st : pp.stages)
      BOOST_TEST(!st.recompute);
  BOOST_TEST(
      plan_from_json(plan_to_json(sample_plan()), "new.json").pipelines[0].stages[1].recompute);
}

BOOST_AUTO_TEST_CASE(rows_between_stages_are_the_overlaps_of_sample_ranges) {
  // Samples [0, 3) and [3, 8) against [0, 5) and [5, 8): 3, then 2 and 3.
  const auto rows = rows_between({3, 5}, {5, 3});
  BOOST_REQUIRE_EQUAL(rows.size(), 3u);
  BOOST_CHECK(rows[0].from == 0 && rows[0].to == 0 && rows[0].samples == 3);
  BOOST_CHECK(rows[1].from == 1 && rows[1].to == 0 && rows[1].samples == 2);
  BOOST_CHECK(rows[2].from == 1 && rows[2].to == 1 && rows[2].samples == 3);
  int total = 0;
  for (const auto& r : rows_between({1, 1, 2}, {4}))
    total += r.samples;
  BOOST_CHECK_EQUAL(total, 4);
}

BOOST_AUTO_TEST_SUITE_END()
