#pragma once

#include "kernels/backend/backend.hpp"
#include "kernels/gpt/gpt_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace deepcee::test {

/// What disagrees between weights after `steps` AdamW steps at rate `lr` on two backends, or
/// empty. Adam turns a gradient below rounding noise into a step of +-lr, so where a
/// gradient was near zero an element may differ by up to a few lr per step; every other
/// element (all but `loose_share`, or one) must agree within `tolerance` of the tensor's
/// largest weight.
inline std::string adam_weights_disagree(const std::vector<float>& got,
                                         const std::vector<float>& want, double tolerance,
                                         double lr, int steps, double loose_share = 0.01) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " weights, expected " + std::to_string(want.size());
  double largest = 1e-12;
  for (float w : want)
    largest = std::max(largest, std::abs(static_cast<double>(w)));
  size_t loose = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(diff <= 3 * lr * steps))
      return "weight " + std::to_string(i) + " differs by " + std::to_string(diff) +
             ", more than 3 lr per step";
    loose += diff > tolerance * largest;
  }
  if (loose > std::max<size_t>(1, static_cast<size_t>(loose_share * got.size())))
    return std::to_string(loose) + " of " + std::to_string(got.size()) +
           " weights differ by more than " + std::to_string(tolerance) + " of the largest";
  return {};
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> out(n);
  for (float& x : out)
    x = u(rng);
  return out;
}

inline std::vector<int32_t> random_tokens(size_t n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> u(0, vocab - 1);
  std::vector<int32_t> out(n);
  for (int32_t& x : out)
    x = u(rng);
  return out;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

inline double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 1e-12;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return num / den;
}

inline runtime::model_config tiny_model() {
  runtime::model_config c;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.context = 8;
  c.vocab = 256;
  return c;
}

} // namespace deepcee::test
