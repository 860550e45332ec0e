#include "runtime/base/model_spec.hpp"
#include "runtime/step/gradient_exchange.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>

using namespace deepcee::runtime;

namespace {

/// Two pipelines over a 2-layer model (4 pipeline layers): pipeline 0 splits at layer 2,
/// pipeline 1 at layer 1.
plan two_pipelines() {
  plan p;
  p.model = model_config{2, 64, 4, 32, 256};
  p.micro_batch_size = 4;
  pipeline_plan a;
  a.stages.push_back({{0}, {4}, 0, 2, compression::none});
  a.stages.push_back({{1}, {4}, 2, 4, compression::none});
  pipeline_plan b;
  b.stages.push_back({{2}, {4}, 0, 1, compression::none});
  b.stages.push_back({{3}, {4}, 1, 4, compression::none});
  p.pipelines = {a, b};
  return p;
}

size_t params_of(const model_config& model, int layer) {
  return static_cast<size_t>(make_model_spec(model).layers.at(static_cast<size_t>(layer)).params);
}

} // namespace

BOOST_AUTO_TEST_SUITE(gradient_exchange)

BOOST_AUTO_TEST_CASE(sizes_add_the_parameters_of_each_layer) {
  const auto p = two_pipelines();
  BOOST_CHECK_EQUAL(gradient_size(p.model, 1, 1), 0u);
  BOOST_CHECK_EQUAL(gradient_size(p.model, 0, 2), params_of(p.model, 0) + params_of(p.model, 1));
  BOOST_CHECK_EQUAL(gradient_size(p.model, 0, 4),
                    static_cast<size_t>(make_model_spec(p.model).total_params()));
}

BOOST_AUTO_TEST_CASE(slices_go_to_every_other_holder_of_a_layer) {
  const auto p = two_pipelines();
  // Pipeline 0's first stage holds layers 0 and 1: layer 0 goes to pipeline 1's stage 0,
  // layer 1 to its stage 1, each the matching part of the sender's vector.
  const auto slices = share_slices(p, 0, {0, 2});
  BOOST_REQUIRE_EQUAL(slices.size(), 2u);
  BOOST_CHECK_EQUAL(slices[0].pipeline, 1);
  BOOST_CHECK_EQUAL(slices[0].stage, 0);
  BOOST_CHECK_EQUAL(slices[0].layers.first, 0);
  BOOST_CHECK_EQUAL(slices[0].layers.last, 1);
  BOOST_CHECK_EQUAL(slices[0].begin, 0u);
  BOOST_CHECK_EQUAL(slices[0].end, params_of(p.model, 0));
  BOOST_CHECK_EQUAL(slices[1].stage, 1);
  BOOST_CHECK_EQUAL(slices[1].layers.first, 1);
  BOOST_CHECK_EQUAL(slices[1].layers.last, 2);
  BOOST_CHECK_EQUAL(slices[1].begin, params_of(p.model, 0));
  BOOST_CHECK_EQUAL(slices[1].end, params_of(p.model, 0) + params_of(p.model, 1));
  // Pipeline 1's last stage (layers 1..3) overlaps both of pipeline 0's stages.
  const auto back = share_slices(p, 1, {1, 4});
  BOOST_REQUIRE_EQUAL(back.size(), 2u);
  BOOST_CHECK_EQUAL(back[0].layers.first, 1);
  BOOST_CHECK_EQUAL(back[0].layers.last, 2);
  BOOST_CHECK_EQUAL(back[1].layers.first, 2);
  BOOST_CHECK_EQUAL(back[1].layers.last, 4);
}

BOOST_AUTO_TEST_CASE(shares_are_refused_naming_what_is_wrong) {
  const auto p = two_pipelines();
  const layer_range own{0, 2};
  const auto good = gradient_size(p.model, 1, 2);
  BOOST_CHECK(share_refusal(p, 0, 7, own, {7, 1, {1, 2}, good}).empty());
  BOOST_CHECK(share_refusal(p, 0, 7, own, {8, 1, {1, 2}, good}).empty()); // the next step
  BOOST_CHECK(share_refusal(p, 0, 7, own, {7, 0, {1, 2}, good}).find("no other pipeline") !=
              std::string::npos);
  BOOST_CHECK(share_refusal(p, 0, 7, own, {7, 2, {1, 2}, good}).find("no other pipeline") !=
              std::string::npos);
  BOOST_CHECK(share_refusal(p, 0, 7, own, {6, 1, {1, 2}, good}).find("no step") !=
              std::string::npos);
  BOOST_CHECK(share_refusal(p, 0, 7, own, {7, 1, {1, 3}, good}).find("outside") !=
              std::string::npos);
  BOOST_CHECK(share_refusal(p, 0, 7, own, {7, 1, {1, 2}, good - 1}).find("expected") !=
              std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_sum_adds_every_pipeline_in_order) {
  const auto p = two_pipelines();
  const layer_range own{0, 2};
  const size_t n0 = params_of(p.model, 0), n = gradient_size(p.model, 0, 2);
  BOOST_CHECK(!shares_complete(2, own, {{0, 1}}));
  BOOST_CHECK(shares_complete(2, own, {{0, 1}, {1, 2}}));
  std::vector<float> mine(n);
  std::iota(mine.begin(), mine.end(), 0.0f);
  std::vector<float> first(n0, 0.5f), second(n - n0, -1.0f);
  const auto total =
      sum_over_pipelines(p.model, 2, 0, own, mine, {{1, {1, 2}, second}, {1, {0, 1}, first}});
  BOOST_REQUIRE_EQUAL(total.size(), n);
  BOOST_CHECK_EQUAL(total[0], 0.5f);
  BOOST_CHECK_EQUAL(total[n0 - 1], static_cast<float>(n0 - 1) + 0.5f);
  BOOST_CHECK_EQUAL(total[n0], static_cast<float>(n0) - 1.0f);
  BOOST_CHECK_EQUAL(total[n - 1], static_cast<float>(n - 1) - 1.0f);
  // A share that does not fit the stage's layers is refused.
  std::vector<float> too_long(n, 1.0f);
  BOOST_CHECK_THROW(sum_over_pipelines(p.model, 2, 0, own, mine, {{1, {1, 2}, too_long}}),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
