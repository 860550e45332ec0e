#include "runtime/plan/plan_allocation.hpp"

#include <boost/test/unit_test.hpp>

#include <functional>
#include <stdexcept>
#include <string>

using namespace deepcee::runtime;

namespace {

/// Two pipelines (3 + 2 micro-batches of 4 samples), three stages in all.
plan two_pipelines() {
  plan p;
  p.model = model_config{2, 64, 4, 32, 256};
  p.micro_batch_size = 4;
  pipeline_plan a;
  a.micro_batches = 3;
  a.stages.push_back({{0, 1}, {3, 1}, 0, 2, compression::int8});
  a.stages.push_back({{2}, {4}, 2, 4, compression::none});
  pipeline_plan b;
  b.micro_batches = 2;
  b.stages.push_back({{3}, {4}, 0, 4, compression::none});
  p.pipelines = {a, b};
  return p;
}

std::string refusal(const plan& base, const plan_allocation& a) {
  try {
    with_allocation(base, a);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(plan_allocation_suite)

BOOST_AUTO_TEST_CASE(an_allocation_round_trips_and_applies) {
  const auto p = two_pipelines();
  auto a = allocation_of(p);
  BOOST_TEST(a.micro_batches == (std::vector<int>{3, 2}));
  BOOST_REQUIRE_EQUAL(a.samples.size(), 3u);
  BOOST_TEST(a.samples[0] == (std::vector<int>{3, 1}));
  BOOST_CHECK(a.compressions[0] == compression::int8);
  BOOST_CHECK(allocation_of(with_allocation(p, a)) == a);

  a.micro_batches = {1, 4};
  a.samples[0] = {1, 3};
  a.compressions[0] = compression::fp16;
  const auto q = with_allocation(p, a);
  BOOST_CHECK_EQUAL(q.pipelines[0].micro_batches, 1);
  BOOST_CHECK_EQUAL(q.pipelines[1].micro_batches, 4);
  BOOST_TEST(q.pipelines[0].stages[0].samples == (std::vector<int>{1, 3}));
  BOOST_CHECK(q.pipelines[0].stages[0].send_compression == compression::fp16);
  BOOST_CHECK_EQUAL(q.global_batch(), p.global_batch());
  BOOST_CHECK(same_layout(p, q));
}

BOOST_AUTO_TEST_CASE(what_would_change_the_math_or_the_layout_is_refused) {
  const auto p = two_pipelines();
  auto a = allocation_of(p);
  a.micro_batches = {3, 3};
  BOOST_TEST(refusal(p, a).find("global batch 24 differs from the plan's 20") != std::string::npos);
  a = allocation_of(p);
  a.micro_batches = {5, 0};
  BOOST_TEST(refusal(p, a).find("pipeline 1 gets 0 micro-batches") != std::string::npos);
  a = allocation_of(p);
  a.samples[0] = {2, 1};
  BOOST_TEST(refusal(p, a).find("do not sum to the micro-batch size 4") != std::string::npos);
  a = allocation_of(p);
  a.samples[1] = {2, 2};
  BOOST_TEST(refusal(p, a).find("2 shares for 1 devices") != std::string::npos);
  a = allocation_of(p);
  a.samples[0] = {4, 0};
  BOOST_TEST(refusal(p, a).find("a device with 0 samples") != std::string::npos);
  a = allocation_of(p);
  a.micro_batches = {5};
  BOOST_TEST(refusal(p, a).find("1 micro-batch counts for 2 pipelines") != std::string::npos);
  a = allocation_of(p);
  a.compressions.pop_back();
  BOOST_TEST(refusal(p, a).find("for 3 stages") != std::string::npos);

  auto moved = p;
  moved.pipelines[0].stages[0].last_layer = 1;
  moved.pipelines[0].stages[1].first_layer = 1;
  BOOST_CHECK(!same_layout(p, moved));
  auto other_devices = p;
  other_devices.pipelines[1].stages[0].devices = {4};
  BOOST_CHECK(!same_layout(p, other_devices));
}

BOOST_AUTO_TEST_SUITE_END()
