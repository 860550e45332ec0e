#pragma once

// CAF's serializer as BASP uses it between nodes, for the tests of what crosses a node.

#include "actors/protocol/type_ids.hpp"
#include "actors/protocol/wire_format.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

namespace deepcee::actors::test {

template <class T>
std::vector<char> serialize(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  BOOST_REQUIRE(!sink(x));
  return buf;
}

/// Loads `buf` into `out`; true when CAF's deserializer accepted it.
template <class T>
bool deserialize(caf::actor_system& sys, const std::vector<char>& buf, T& out) {
  caf::binary_deserializer source{sys, buf};
  return !source(out);
}

template <class T>
T round_trip(caf::actor_system& sys, T x) {
  const auto buf = serialize(sys, x);
  T back;
  BOOST_REQUIRE(deserialize(sys, buf, back));
  return back;
}

/// A CAF-serialized byte vector: how every Cap'n Proto-carried struct crosses a node.
inline std::vector<char> serialized_bytes(caf::actor_system& sys, std::vector<uint8_t> bytes) {
  return serialize(sys, std::move(bytes));
}

/// `bytes` with one to three bits flipped, and every fifth time (`i`) truncated too: a
/// corrupted message as a fuzz loop makes it.
inline std::vector<uint8_t> corrupted(std::vector<uint8_t> bytes, std::mt19937& rng, int i) {
  for (int f = 1 + static_cast<int>(rng() % 3); f > 0; --f)
    bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
  if (i % 5 == 0)
    bytes.resize(rng() % bytes.size());
  return bytes;
}

/// `rounds` corrupted copies of `good`'s bytes: each refused and counted, or accepted only
/// when what it loads obeys `valid` (given the corrupted bytes too). Returns how many were
/// refused.
template <class T>
int fuzz(caf::actor_system& sys, const T& good, uint32_t seed, int rounds,
         const std::function<bool(const T&, const std::vector<uint8_t>&)>& valid) {
  const auto bytes = messages::encode(good);
  std::mt19937 rng(seed);
  int refusals = 0;
  const auto before = actors::dropped_wire_messages(sys);
  for (int i = 0; i < rounds; ++i) {
    const auto bad = corrupted(bytes, rng, i);
    T out;
    if (!deserialize(sys, serialized_bytes(sys, bad), out))
      ++refusals;
    else
      BOOST_TEST(valid(out, bad));
  }
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == refusals);
  return refusals;
}

} // namespace deepcee::actors::test
