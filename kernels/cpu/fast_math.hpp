#pragma once

#include <bit>
#include <cstdint>

namespace deepcee::kernels::fast {

/// e^x for float, branch-free so that loops over it vectorize (glibc's expf and tanhf
/// are scalar calls, and were most of the CPU step time). Vectorizing the selects below
/// needs -fno-trapping-math, which kernels/CMakeLists.txt sets for the CPU backend. Range reduction
/// x = n ln2 + r, |r| <= ln2 / 2, then a degree-6 polynomial: relative error about 2e-7 over the
/// float range, checked against std::exp in the kernel tests. Inputs below -87.3
/// return 0 (through 2^n with n clamped), as softmax needs for masked scores.
inline float exp(float x) {
  constexpr float log2e = 1.44269504088896341f;
  constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.7f ? 88.7f : x;
  // Round to nearest by adding and removing 1.5 * 2^23 (floorf is a library call on
  // baseline x86-64, which would stop the loop from vectorizing).
  constexpr float round_magic = 12582912.0f;
  float n = (x * log2e + round_magic) - round_magic;
  float r = x - n * ln2_hi - n * ln2_lo;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

/// tanh(x) = sign(x) (1 - 2 / (e^{2|x|} + 1)), with e^{2|x|} from fast::exp; absolute
/// error about 1e-7.
inline float tanh(float x) {
  float a = x < 0 ? -x : x;
  a = a > 9.0f ? 9.0f : a; // tanh(9) = 1 - 3e-8: saturated in float
  float t = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  return x < 0 ? -t : t;
}

} // namespace deepcee::kernels::fast
