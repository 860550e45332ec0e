#pragma once

#include <cstdint>

namespace deepcee::runtime {

/// splitmix64: a stateless 64-bit mixer. Batches and initial weights are pure functions of
/// (seed, index) through it, so there is no generator state to save in a checkpoint and
/// every platform draws the same numbers.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace deepcee::runtime
