#include "runtime/step/ring_allreduce.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

using deepcee::runtime::ring_allreduce;

namespace {

/// Runs a ring of `size` ranks over per-rank vectors, delivering each round's chunks in
/// reverse rank order (any order must give the same result), and returns every rank's end.
std::vector<std::vector<float>> run_ring(const std::vector<std::vector<float>>& inputs,
                                         size_t max_chunk = ring_allreduce::unbounded) {
  const int n = static_cast<int>(inputs.size());
  std::vector<ring_allreduce> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back(r, n, inputs[static_cast<size_t>(r)], max_chunk);
  const size_t length = inputs[0].size();
  int rounds = 0;
  while (!ranks[0].done()) {
    std::vector<ring_allreduce::chunk> sent;
    for (auto& r : ranks) {
      sent.push_back(r.outgoing());
      BOOST_TEST(sent.back().values.size() <= max_chunk);
      const int to = (static_cast<int>(sent.size())) % n; // the next rank receives it
      BOOST_TEST(sent.back().values.size() ==
                 ring_allreduce::incoming_length(length, to, n, rounds, max_chunk));
    }
    for (int r = n - 1; r >= 0; --r)
      ranks[static_cast<size_t>(r)].receive(sent[static_cast<size_t>((r + n - 1) % n)]);
    ++rounds;
  }
  BOOST_TEST(rounds == ring_allreduce::segments(length, n, max_chunk) * 2 * (n - 1));
  std::vector<std::vector<float>> out;
  for (auto& r : ranks) {
    BOOST_TEST(r.done());
    out.push_back(r.values());
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(ring_allreduce_logic)

BOOST_AUTO_TEST_CASE(every_rank_ends_with_the_sum_for_every_size_and_length) {
  for (int n = 1; n <= 5; ++n)
    for (size_t length : {size_t{0}, size_t{1}, size_t{3}, size_t{7}, size_t{64}}) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < n; ++r) {
        std::vector<float> v(length);
        for (size_t i = 0; i < length; ++i)
          v[i] = static_cast<float>((r + 1) * 100 + static_cast<int>(i)); // exact in float
        inputs.push_back(v);
      }
      const auto out = run_ring(inputs);
      for (size_t i = 0; i < length; ++i) {
        float want = 0;
        for (const auto& v : inputs)
          want += v[i];
        for (int r = 0; r < n; ++r)
          BOOST_TEST(out[static_cast<size_t>(r)][i] == want,
                     "n=" << n << " length=" << length << " rank " << r << " value " << i);
      }
    }
}

BOOST_AUTO_TEST_CASE(ranks_end_bit_identical_with_inexact_sums) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < 4; ++r) {
    std::vector<float> v(101);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(static_cast<float>(r * 1000 + static_cast<int>(i))) * 1e-3f + 1.0f / 3;
    inputs.push_back(v);
  }
  const auto out = run_ring(inputs);
  for (size_t r = 1; r < out.size(); ++r)
    BOOST_TEST(out[r] == out[0]); // bitwise: one summation order per chunk
  for (size_t i = 0; i < out[0].size(); ++i) {
    double want = 0;
    for (const auto& v : inputs)
      want += v[i];
    BOOST_TEST(std::abs(out[0][i] - want) < 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(bounded_chunks_reduce_segment_after_segment_to_the_same_sums) {
  for (int n = 1; n <= 5; ++n)
    for (size_t length : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{101}})
      for (size_t max_chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
        std::vector<std::vector<float>> inputs;
        for (int r = 0; r < n; ++r) {
          std::vector<float> v(length);
          for (size_t i = 0; i < length; ++i)
            v[i] = std::sin(static_cast<float>(r * 1000 + static_cast<int>(i))) * 1e-3f + 1.0f / 3;
          inputs.push_back(v);
        }
        const auto out = run_ring(inputs, max_chunk);
        const auto what = "n=" + std::to_string(n) + " length=" + std::to_string(length) +
                          " max_chunk=" + std::to_string(max_chunk);
        for (size_t r = 1; r < out.size(); ++r)
          BOOST_TEST(out[r] == out[0], what); // bitwise, as without segments
        for (size_t i = 0; i < length; ++i) {
          double want = 0;
          for (const auto& v : inputs)
            want += v[i];
          BOOST_TEST(std::abs(out[0][i] - want) < 1e-6, what);
        }
      }
  // 101 values over 3 ranks in chunks of at most 5: 7 segments of 14 or 15 values.
  BOOST_TEST(ring_allreduce::segments(101, 3, 5) == 7);
  BOOST_TEST(ring_allreduce::segments(0, 3, 5) == 1);
  BOOST_TEST(ring_allreduce::segments(size_t{1} << 40, 8, ring_allreduce::unbounded) == 1);
  BOOST_CHECK_THROW(ring_allreduce(0, 2, {}, 0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(chunks_cover_the_vector_in_order) {
  for (int n = 1; n <= 6; ++n)
    for (size_t length : {size_t{0}, size_t{2}, size_t{13}}) {
      size_t at = 0;
      for (int c = 0; c < n; ++c) {
        const auto [b, e] = ring_allreduce::bounds(length, n, c);
        BOOST_TEST(b == at);
        BOOST_TEST(e >= b);
        at = e;
      }
      BOOST_TEST(at == length);
    }
}

BOOST_AUTO_TEST_CASE(a_chunk_of_another_round_or_length_is_refused_and_changes_nothing) {
  ring_allreduce a(0, 3, {1, 2, 3, 4, 5, 6});
  const auto before = a.values();
  BOOST_CHECK_THROW(a.receive({1, {1, 1}}), std::invalid_argument);    // round 1 in round 0
  BOOST_CHECK_THROW(a.receive({0, {1, 1, 1}}), std::invalid_argument); // 3 values, chunk of 2
  BOOST_TEST(a.values() == before);
  BOOST_TEST(a.round() == 0);
  BOOST_CHECK_THROW(ring_allreduce(3, 3, {}), std::invalid_argument);
  ring_allreduce single(0, 1, {7});
  BOOST_TEST(single.done());
  BOOST_CHECK_THROW(single.outgoing(), std::logic_error);
}

BOOST_AUTO_TEST_CASE(an_honest_peers_early_rounds_may_wait_and_nothing_else) {
  using deepcee::runtime::early_chunk_refusal;
  using deepcee::runtime::ring_round;
  // Rank 1 of 3 reduces 10 values; its previous rank ran ahead: every round of step 5 came
  // before rank 1's first reduce, then every round of step 6 after step 5's reduce, then
  // (a resumed job) every round of step 40.
  deepcee::runtime::ring_position at{1, 3, 10, -1, 0};
  const auto length = [&](int round) { return ring_allreduce::incoming_length(10, 1, 3, round); };
  std::vector<ring_round> waiting;
  for (int64_t step : {5, 6, 40}) {
    for (int round = 0; round < 4; ++round) {
      BOOST_TEST(early_chunk_refusal(waiting, {step, round}, length(round), at) == "");
      waiting.push_back({step, round});
    }
    waiting.clear(); // its reduce applies them
    at.last_step = step;
  }
  const auto refusal = [&](ring_round chunk, size_t values) {
    return early_chunk_refusal(waiting, chunk, values, at);
  };
  waiting = {{41, 0}};
  BOOST_TEST(refusal({41, 4}, length(0)) == "round 4 of step 41: a ring of 3 has 4 rounds");
  BOOST_TEST(refusal({41, -1}, length(0)) == "round -1 of step 41: a ring of 3 has 4 rounds");
  BOOST_TEST(refusal({41, 0}, length(0)) == "round 0 of step 41 came twice");
  BOOST_TEST(refusal({42, 0}, length(0)) ==
             "round 0 of step 42 while rounds of step 41 wait: a ring runs one step at a time");
  BOOST_TEST(refusal({40, 1}, length(1)) ==
             "round 1 of step 40 after step 40 reduced: a ring runs one step at a time");
  BOOST_TEST(refusal({41, 1}, length(1) + 1) ==
             "round 1 of step 41 has " + std::to_string(length(1) + 1) + " values, expected " +
                 std::to_string(length(1)));
  at.last_step = 41; // step 41 reduces, two rounds applied
  at.applied = 2;
  at.reducing = true;
  waiting.clear();
  BOOST_TEST(refusal({41, 1}, length(1)) == "round 1 of step 41 came twice");
  BOOST_TEST(refusal({41, 2}, length(2)) == "");
  BOOST_TEST(refusal({42, 0}, length(0)) ==
             "round 0 of step 42 while step 41 reduces: a ring runs one step at a time");
  BOOST_TEST(early_chunk_refusal({}, {0, 0}, 1, {0, 1, 1, -1, 0}) ==
             "round 0 of step 0: a ring of 1 has 0 rounds");
  // Chunks of at most 2 values: 10 values over 3 ranks take 2 segments, 8 rounds.
  const deepcee::runtime::ring_position bounded{1, 3, 10, -1, 0, 2};
  BOOST_TEST(early_chunk_refusal({}, {0, 7}, ring_allreduce::incoming_length(10, 1, 3, 7, 2),
                                 bounded) == "");
  BOOST_TEST(early_chunk_refusal({}, {0, 8}, 1, bounded) ==
             "round 8 of step 0: a ring of 3 has 8 rounds");
}

BOOST_AUTO_TEST_SUITE_END()
