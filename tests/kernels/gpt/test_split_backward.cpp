// B then W in any order equals the fused backward; slices compose into the whole model.
#include "kernels/device/make_backend.hpp"
#include "kernels/gpt/transformer_block.hpp"
#include "tests/support/gpt_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <random>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

constexpr int B = 3, micro_batches = 4;

struct batch {
  tensor tokens, targets;
};

std::vector<batch> make_batches(backend& be, const runtime::model_config& c) {
  std::vector<batch> out;
  for (int i = 0; i < micro_batches; ++i)
    out.push_back(
        {be.from_host(test::random_tokens(B * c.context, c.vocab, 10 + i), {B, c.context}),
         be.from_host(test::random_tokens(B * c.context, c.vocab, 20 + i), {B, c.context})});
  return out;
}

std::map<std::string, std::vector<float>> gradients(backend& be, gpt_model& m) {
  std::map<std::string, std::vector<float>> out;
  for (parameter* p : m.parameters())
    out[p->name] = be.to_host<float>(p->grad);
  return out;
}

void require_close(const std::map<std::string, std::vector<float>>& a,
                   const std::map<std::string, std::vector<float>>& b, double tolerance) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (const auto& [name, grad] : a) {
    BOOST_TEST_INFO(name);
    BOOST_REQUIRE(b.count(name) == 1);
    BOOST_TEST(test::max_rel_diff(grad, b.at(name)) <= tolerance);
  }
}

float loss_scale(const runtime::model_config& c) {
  return 1.0f / static_cast<float>(micro_batches * B * c.context);
}

} // namespace

BOOST_AUTO_TEST_SUITE(split_backward)

BOOST_AUTO_TEST_CASE(deferred_weight_gradients_equal_fused_backward) {
  auto be = make_backend({});
  runtime::model_config c = test::tiny_model();
  auto batches = make_batches(*be, c);

  gpt_model fused(*be, c, 5);
  for (int i = 0; i < micro_batches; ++i) {
    fused.forward(i, batches[i].tokens, &batches[i].targets, loss_scale(c));
    fused.backward_input(i, {});
    fused.backward_weight(i);
  }

  // All F, then B in one shuffled order, W in another, W interleaved with later B's.
  gpt_model split(*be, c, 5);
  std::vector<int> order_b{2, 0, 3, 1}, order_w{3, 2, 0, 1};
  for (int i = 0; i < micro_batches; ++i)
    split.forward(i, batches[i].tokens, &batches[i].targets, loss_scale(c));
  std::vector<bool> done_b(micro_batches, false);
  size_t next_w = 0;
  for (int i : order_b) {
    split.backward_input(i, {});
    done_b[i] = true;
    while (next_w < order_w.size() && done_b[order_w[next_w]])
      split.backward_weight(order_w[next_w++]);
  }
  BOOST_REQUIRE_EQUAL(next_w, order_w.size());
  BOOST_TEST(split.saved_bytes() == 0u);
  // Only the order of accumulation across micro-batches differs.
  require_close(gradients(*be, fused), gradients(*be, split), 1e-5);
}

BOOST_AUTO_TEST_CASE(weight_before_input_gradient_is_rejected) {
  auto be = make_backend({});
  runtime::model_config c = test::tiny_model();
  auto batches = make_batches(*be, c);
  gpt_model m(*be, c, 5);
  m.forward(0, batches[0].tokens, &batches[0].targets, 1.0f);
  BOOST_CHECK_THROW(m.backward_weight(0), std::logic_error);
}

BOOST_AUTO_TEST_CASE(between_b_and_w_a_block_keeps_only_what_w_needs) {
  auto be = make_backend({});
  const int b = 2, T = 8, C = 16;
  transformer_block block(*be, 0, C, 2, 1, 3);
  tensor x = be->from_host(test::random_floats(b * T * C, 1), {b, T, C});
  tensor dy = be->from_host(test::random_floats(b * T * C, 2), {b, T, C});
  block.forward(0, x);
  BOOST_TEST(block.saved_bytes() > 0u);
  block.backward_input(0, dy);
  size_t after_b = block.saved_bytes();
  // W's inputs: 4 matmul inputs (C, C, C, 4C) and output gradients (3C, C, 4C, C), two
  // LayerNorms' input (C), mean and rstd (1 + 1) and output gradient (C) each.
  const size_t N = b * T;
  BOOST_TEST(after_b == 4 * (N * (7 * C + 9 * C) + 2 * N * (2 * C + 2)));
  block.backward_weight(0);
  BOOST_TEST(block.saved_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(slices_compose_into_the_whole_model) {
  auto be = make_backend({});
  runtime::model_config c = test::tiny_model(); // 4 pipeline layers: emb, 2 blocks, head
  auto batches = make_batches(*be, c);

  gpt_model whole(*be, c, 5);
  std::vector<float> whole_losses;
  for (int i = 0; i < 2; ++i) {
    auto l = be->to_host<float>(whole.forward(i, batches[i].tokens, &batches[i].targets, 0.5f));
    whole_losses.insert(whole_losses.end(), l.begin(), l.end());
    whole.backward_input(i, {});
    whole.backward_weight(i);
  }

  // Three slices; activations and gradients cross as host bytes, as over a network.
  std::vector<gpt_model> slices;
  slices.emplace_back(*be, c, 0, 1, 5);
  slices.emplace_back(*be, c, 1, 3, 5);
  slices.emplace_back(*be, c, 3, 4, 5);
  auto wire = [&](const tensor& t) { return be->from_host(be->to_host<float>(t), t.shape()); };
  std::vector<float> slice_losses;
  for (int i = 0; i < 2; ++i) {
    tensor a0 = wire(slices[0].forward(i, batches[i].tokens));
    tensor a1 = wire(slices[1].forward(i, a0));
    auto l = be->to_host<float>(slices[2].forward(i, a1, &batches[i].targets, 0.5f));
    slice_losses.insert(slice_losses.end(), l.begin(), l.end());
    tensor g1 = wire(slices[2].backward_input(i, {}));
    tensor g0 = wire(slices[1].backward_input(i, g1));
    BOOST_TEST(slices[0].backward_input(i, g0).empty());
    for (auto& s : slices)
      s.backward_weight(i);
  }
  BOOST_TEST(test::max_rel_diff(slice_losses, whole_losses) == 0.0);

  std::map<std::string, std::vector<float>> merged;
  for (auto& s : slices)
    merged.merge(gradients(*be, s));
  require_close(gradients(*be, whole), merged, 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
