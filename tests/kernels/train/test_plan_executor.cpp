// A plan of 2 pipelines (3 and 2 stages, data parallelism inside stages, uneven sample
// shares and micro-batch counts) trains exactly like one device on the same global batch,
// seed and data, for every schedule.
#include "kernels/device/make_backend.hpp"
#include "kernels/train/plan_executor.hpp"
#include "tests/support/gpt_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

runtime::text_corpus corpus() {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "pack my box with five dozen liquor jugs " + std::to_string(i * 7919 % 1000) + "\n";
  return runtime::text_corpus::from_texts(text, text.substr(0, 3000));
}

runtime::train_config config() {
  runtime::train_config c;
  c.model = test::tiny_model(); // layers: 0 embedding, 1-2 blocks, 3 head
  c.model.n_layer = 3;          // 5 pipeline layers
  c.batch = 12;
  c.steps = 30;
  c.optimizer.lr = 1e-2;
  return c;
}

runtime::stage_plan stage(std::vector<int> devices, std::vector<int> samples, int first, int last) {
  runtime::stage_plan s;
  s.devices = std::move(devices);
  s.samples = std::move(samples);
  s.first_layer = first;
  s.last_layer = last;
  return s;
}

/// b = 3 samples per micro-batch; pipeline 0 runs 3 micro-batches over 3 stages, pipeline
/// 1 runs 1 over 2 stages: 3 * 3 + 1 * 3 = 12 samples.
runtime::plan two_pipelines(runtime::schedule_kind kind) {
  runtime::plan p;
  p.strategy = "test";
  p.model = config().model;
  p.micro_batch_size = 3;
  runtime::pipeline_plan a;
  a.micro_batches = 3;
  a.schedule = kind;
  a.stages = {stage({0, 1}, {2, 1}, 0, 2), stage({2}, {3}, 2, 3), stage({3, 4}, {1, 2}, 3, 5)};
  runtime::pipeline_plan b;
  b.micro_batches = 1;
  b.schedule = kind;
  b.stages = {stage({5}, {3}, 0, 3), stage({6, 7}, {2, 1}, 3, 5)};
  p.pipelines = {a, b};
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(plan_executor_tests)

BOOST_AUTO_TEST_CASE(every_schedule_matches_single_device_training) {
  auto be = make_backend({});
  auto data = corpus();
  trainer single(*be, config(), data);
  std::vector<double> expected;
  for (int i = 0; i < 30; ++i)
    expected.push_back(single.train_step().loss);
  BOOST_TEST(expected.back() < 0.7 * expected.front()); // it learns, so the check means something

  for (auto kind : {runtime::schedule_kind::gpipe, runtime::schedule_kind::one_f_one_b,
                    runtime::schedule_kind::zb_h1, runtime::schedule_kind::zb_h2,
                    runtime::schedule_kind::greedy}) {
    plan_executor ex(*be, two_pipelines(kind), config(), data);
    for (int i = 0; i < 30; ++i) {
      double loss = ex.train_step().loss;
      BOOST_TEST_INFO(runtime::to_string(kind) << " step " << i + 1);
      BOOST_TEST(std::abs(loss - expected[i]) <= 1e-3 * expected[i]);
    }
  }
}

// Activation recomputation on some stages (one with the embedding, one with the head, one
// in the middle) trains as without it. It gives the same losses as one device. For a fixed
// schedule and zero bubble, it is bit for bit the same as the plan without recomputation.
BOOST_AUTO_TEST_CASE(recomputing_stages_match_single_device_training) {
  auto be = make_backend({});
  auto data = corpus();
  trainer single(*be, config(), data);
  std::vector<double> expected;
  for (int i = 0; i < 30; ++i)
    expected.push_back(single.train_step().loss);
  for (auto kind : {runtime::schedule_kind::one_f_one_b, runtime::schedule_kind::zb_h1}) {
    runtime::plan with = two_pipelines(kind);
    with.pipelines[0].stages[0].recompute = true;
    with.pipelines[0].stages[1].recompute = true;
    with.pipelines[1].stages[1].recompute = true;
    plan_executor plain(*be, two_pipelines(kind), config(), data);
    plan_executor recomputing(*be, with, config(), data);
    for (int i = 0; i < 30; ++i) {
      const double a = plain.train_step().loss;
      const double r = recomputing.train_step().loss;
      BOOST_TEST_INFO(runtime::to_string(kind) << " step " << i + 1);
      BOOST_TEST(std::abs(r - expected[size_t(i)]) <= 1e-3 * expected[size_t(i)]);
      BOOST_TEST(r == a);
    }
  }
}

// Between F and B a recomputing worker holds only the micro-batch's input; B rebuilds the
// rest and gives the same input gradient and weight gradients as a worker that kept it.
BOOST_AUTO_TEST_CASE(a_recomputing_worker_keeps_only_the_input_until_b) {
  auto be = make_backend({});
  const runtime::model_config m = config().model;
  stage_worker keeps(*be, m, 1, 3, 7, config().optimizer);
  stage_worker drops(*be, m, 1, 3, 7, config().optimizer);
  drops.set_recompute(true);
  const int n = 2;
  const int64_t rows = int64_t(n) * m.context * m.d_model;
  std::vector<float> xs(static_cast<size_t>(rows)), dys(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    xs[size_t(i)] = 0.01f * float((i * 37) % 101) - 0.5f;
    dys[size_t(i)] = 0.001f * float((i * 53) % 97) - 0.05f;
  }
  tensor x = be->alloc({n, m.context, m.d_model});
  be->upload(x, xs.data(), x.bytes());
  tensor dy = be->alloc({n, m.context, m.d_model});
  be->upload(dy, dys.data(), dy.bytes());

  const auto y_keep = be->to_host<float>(keeps.forward(0, x, nullptr, 1.0f));
  const auto y_drop = be->to_host<float>(drops.forward(0, x, nullptr, 1.0f));
  BOOST_TEST(y_keep == y_drop);
  BOOST_TEST(drops.held_bytes() == x.bytes()); // the input alone
  BOOST_TEST(keeps.held_bytes() > 4 * x.bytes());

  const auto dx_keep = be->to_host<float>(keeps.backward_input(0, dy));
  const auto dx_drop = be->to_host<float>(drops.backward_input(0, dy));
  BOOST_TEST(dx_keep == dx_drop);
  BOOST_TEST(drops.held_bytes() == keeps.held_bytes()); // what W needs, alike
  keeps.backward_weight(0);
  drops.backward_weight(0);
  BOOST_TEST(drops.held_bytes() == 0u);
  auto pk = keeps.model().parameters(), pd = drops.model().parameters();
  BOOST_TEST_REQUIRE(pk.size() == pd.size());
  for (size_t i = 0; i < pk.size(); ++i) {
    BOOST_TEST_INFO(pk[i]->name);
    BOOST_TEST(be->to_host<float>(pk[i]->grad) == be->to_host<float>(pd[i]->grad));
  }
}

BOOST_AUTO_TEST_CASE(a_batch_that_differs_from_the_plan_is_rejected) {
  auto be = make_backend({});
  auto data = corpus();
  runtime::train_config c = config();
  c.batch = 10;
  BOOST_CHECK_THROW(plan_executor(*be, two_pipelines(runtime::schedule_kind::zb_h1), c, data),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
