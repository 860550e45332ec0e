// The whole GPT on the CUDA backend against the CPU backend: same weights (they depend
// only on the seed), same batch; losses and every gradient agree, and a few AdamW steps
// stay together. bf16 matrix products get a looser tolerance.
#include "kernels/device/make_backend.hpp"
#include "kernels/gpt/gpt_model.hpp"
#include "kernels/optim/adamw.hpp"
#include "tests/support/gpt_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

runtime::model_config model() {
  runtime::model_config c;
  c.n_layer = 2;
  c.d_model = 64;
  c.n_head = 4;
  c.context = 32;
  return c;
}

struct run {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads, weights;
};

run train(backend& be, int steps) {
  auto c = model();
  const int B = 4;
  gpt_model m(be, c, 11);
  adamw opt(be, m.parameters(), runtime::optimizer_config{});
  run r;
  for (int s = 0; s < steps; ++s) {
    m.zero_grad();
    tensor x = be.from_host(test::random_tokens(B * c.context, 256, 2 * s), {B, c.context});
    tensor y = be.from_host(test::random_tokens(B * c.context, 256, 2 * s + 1), {B, c.context});
    auto l = be.to_host<float>(m.forward(0, x, &y, 1.0f / (B * c.context)));
    double mean = 0;
    for (float v : l)
      mean += v / l.size();
    r.losses.push_back(static_cast<float>(mean));
    m.backward_input(0, {});
    m.backward_weight(0);
    if (s == 0)
      for (parameter* p : m.parameters())
        r.grads.push_back(be.to_host<float>(p->grad));
    opt.step(1e-3f, s + 1, std::sqrt(opt.grad_sum_squares()));
  }
  for (parameter* p : m.parameters())
    r.weights.push_back(be.to_host<float>(p->value));
  return r;
}

/// `loose_share`: the share of each tensor's weights that may differ by more than 10x
/// `tolerance` (adam_weights_disagree).
void compare(matmul_precision precision, double tolerance, double loose_share) {
  auto cpu = make_backend({});
  backend_options o;
  o.kind = backend_kind::cuda;
  o.precision = precision;
  auto gpu = make_backend(o);
  run a = train(*cpu, 3), b = train(*gpu, 3);
  BOOST_TEST(test::max_rel_diff(b.losses, a.losses) <= tolerance);
  for (size_t i = 0; i < a.grads.size(); ++i) {
    BOOST_TEST_INFO("gradient " << i);
    BOOST_TEST(test::max_rel_diff(b.grads[i], a.grads[i]) <= 10 * tolerance);
  }
  for (size_t i = 0; i < a.weights.size(); ++i) {
    const auto why = test::adam_weights_disagree(b.weights[i], a.weights[i], 10 * tolerance, 1e-3,
                                                 3, loose_share);
    BOOST_TEST(why.empty(), "weights " << i << ": " << why);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_model)

BOOST_AUTO_TEST_CASE(fp32_matches_cpu) {
  compare(matmul_precision::fp32, 1e-4, 0.01);
}

BOOST_AUTO_TEST_CASE(bf16_matches_cpu_loosely) {
  // bf16 matmuls leave gradients within 10x 2e-2 of fp32's, so where a gradient is that close
  // to zero (a bias, which starts at 0) its sign may flip, and Adam's first steps move that
  // weight the other way by up to lr per step: up to a tenth of a tensor may so differ.
  compare(matmul_precision::bf16, 2e-2, 0.1);
}

BOOST_AUTO_TEST_SUITE_END()
