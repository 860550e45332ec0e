#include "kernels/gpt/parameter.hpp"

#include "runtime/base/splitmix.hpp"

#include <cmath>

namespace deepcee::kernels {
namespace {

using runtime::splitmix64;

double unit_open(uint64_t bits) { // (0, 1)
  return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

} // namespace

uint64_t hash_name(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::vector<float> normal_samples(uint64_t key, size_t n, float stddev) {
  std::vector<float> out(n);
  constexpr double two_pi = 6.283185307179586;
  for (size_t i = 0; i < n; i += 2) { // Box-Muller, two samples per pair of uniforms
    double u1 = unit_open(splitmix64(key ^ splitmix64(2 * i)));
    double u2 = unit_open(splitmix64(key ^ splitmix64(2 * i + 1)));
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(stddev * r * std::cos(two_pi * u2));
    if (i + 1 < n)
      out[i + 1] = static_cast<float>(stddev * r * std::sin(two_pi * u2));
  }
  return out;
}

parameter make_parameter(backend& be, std::string name, std::vector<int64_t> shape, init_kind init,
                         float stddev, uint64_t seed) {
  parameter p;
  p.value = be.alloc(shape);
  p.grad = be.zeros(shape);
  p.decays = init == init_kind::normal;
  size_t n = static_cast<size_t>(p.value.numel());
  if (init == init_kind::normal) {
    be.upload(p.value, normal_samples(seed ^ hash_name(name), n, stddev).data(), n * 4);
  } else {
    be.fill(p.value.f32(), init == init_kind::ones ? 1.0f : 0.0f, p.value.numel());
  }
  p.name = std::move(name);
  return p;
}

} // namespace deepcee::kernels
