// Finite-difference checks of every layer kind's B and W against its forward.
#include "kernels/device/make_backend.hpp"
#include "kernels/gpt/embedding_layer.hpp"
#include "kernels/gpt/head_layer.hpp"
#include "kernels/gpt/transformer_block.hpp"
#include "tests/support/gpt_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

constexpr int B = 2, T = 5, C = 16, H = 2, V = 256;

/// Scalar objective of a layer's output: sum(out * probe) for a fixed random probe, so
/// that its gradient with respect to the output is the probe itself.
struct objective {
  backend& be;
  layer& l;
  tensor input;
  std::vector<float> probe; // empty: the output is already the loss terms (head)
  std::function<void()> before_forward = [] {};

  double value() {
    before_forward();
    std::vector<float> out = be.to_host<float>(l.forward(99, input));
    l.forget(99);
    if (probe.empty()) {
      double s = 0;
      for (float x : out)
        s += x;
      return s;
    }
    return test::dot(out, probe);
  }
};

/// Central difference of the objective along a random direction u of `values`, against
/// <analytic gradient, u>. Directional checks catch a wrong transpose or scale anywhere
/// in the tensor; a relative error of 2% in fp32 is far below what such a bug causes.
void check_direction(objective& obj, tensor& values, const std::vector<float>& analytic,
                     uint64_t seed, const std::string& what) {
  std::vector<float> x0 = obj.be.to_host<float>(values);
  std::vector<float> u = test::random_floats(x0.size(), seed);
  const float eps = 1e-2f;
  auto shifted = [&](float sign) {
    std::vector<float> x = x0;
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += sign * eps * u[i];
    obj.be.upload(values, x.data(), x.size() * 4);
    return obj.value();
  };
  double numeric = (shifted(+1) - shifted(-1)) / (2 * eps);
  obj.be.upload(values, x0.data(), x0.size() * 4);
  double exact = test::dot(analytic, u);
  BOOST_TEST_INFO(what << ": numeric " << numeric << " analytic " << exact);
  BOOST_TEST(std::abs(numeric - exact) <= 2e-2 * std::max(1.0, std::abs(exact)));
}

/// Runs F, B, W once with the probe as output gradient, then checks the input gradient
/// (when the input is continuous) and every parameter's gradient.
void check_layer(backend& be, layer& l, objective& obj, bool input_is_continuous) {
  for (parameter* p : l.parameters())
    be.fill(p->grad.f32(), 0, p->grad.numel());
  obj.before_forward();
  l.forward(1, obj.input);
  tensor dy = obj.probe.empty() ? tensor{} : be.from_host(obj.probe, {B, T, C});
  tensor dx = l.backward_input(1, dy);
  l.backward_weight(1);
  BOOST_TEST(l.saved_bytes() == 0u);
  uint64_t seed = 7;
  if (input_is_continuous)
    check_direction(obj, obj.input, be.to_host<float>(dx), seed++, l.name() + " input");
  for (parameter* p : l.parameters())
    check_direction(obj, p->value, be.to_host<float>(p->grad), seed++, p->name);
}

} // namespace

BOOST_AUTO_TEST_SUITE(gpt_gradients)

BOOST_AUTO_TEST_CASE(transformer_block_input_and_weights) {
  auto be = make_backend({});
  transformer_block block(*be, 0, C, H, 2, 3);
  // Larger than initialization so that every path (attention, GELU curvature) matters.
  for (parameter* p : block.parameters())
    if (p->decays)
      be->upload(p->value, test::random_floats(p->value.numel(), hash_name(p->name), 0.3f).data(),
                 p->value.bytes());
  objective obj{*be, block, be->from_host(test::random_floats(B * T * C, 1), {B, T, C}),
                test::random_floats(B * T * C, 2)};
  check_layer(*be, block, obj, true);
}

BOOST_AUTO_TEST_CASE(head_input_and_weights) {
  auto be = make_backend({});
  head_layer head(*be, V, C, 3);
  tensor targets = be->from_host(test::random_tokens(B * T, V, 4), {B, T});
  objective obj{*be, head, be->from_host(test::random_floats(B * T * C, 1), {B, T, C}), {}};
  // set_targets must name the micro-batch of the coming forward: 1 in check_layer, 99 in value().
  int next_micro = 1;
  obj.before_forward = [&] {
    head.set_targets(next_micro, targets, 1.0f);
    next_micro = 99;
  };
  check_layer(*be, head, obj, true);
}

BOOST_AUTO_TEST_CASE(embedding_weights) {
  auto be = make_backend({});
  embedding_layer emb(*be, V, T, C, 3);
  // Repeated tokens: the gradient of a row used twice must accumulate both uses.
  std::vector<int32_t> tokens = test::random_tokens(B * T, 6, 5);
  objective obj{*be, emb, be->from_host(tokens, {B, T}), test::random_floats(B * T * C, 2)};
  check_layer(*be, emb, obj, false);
}

BOOST_AUTO_TEST_SUITE_END()
