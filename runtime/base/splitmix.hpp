#pragma once

#include <cstdint>

namespace deepcee::runtime {

/// splitmix64: a stateless 64-bit mixer. Batches and initial weights are pure functions of
/// (seed, index) through it, so there is no generator state to save in a checkpoint and
/// every platform draws the same numbers.
constexpr uint64_t splitmix_step = 0x9e3779b97f4a7c15ULL;

constexpr uint64_t splitmix64(uint64_t x) {
  x += splitmix_step;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The sequence splitmix64(seed), splitmix64(seed + step), ...: a generator whose whole
/// state is one number, for what draws many values in turn (generated clusters, searches).
struct splitmix_sequence {
  uint64_t state = 0;
  uint64_t next() {
    const uint64_t out = splitmix64(state);
    state += splitmix_step;
    return out;
  }
};

} // namespace deepcee::runtime
