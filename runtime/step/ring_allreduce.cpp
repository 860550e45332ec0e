#include "runtime/step/ring_allreduce.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace deepcee::runtime {

ring_allreduce::ring_allreduce(int rank, int size, std::vector<float> values, size_t max_chunk)
    : rank_(rank), size_(size), values_(std::move(values)) {
  if (size < 1 || rank < 0 || rank >= size || max_chunk == 0)
    throw std::invalid_argument("ring_allreduce: rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + ", chunks of at most " +
                                std::to_string(max_chunk));
  segments_ = segments(values_.size(), size, max_chunk);
}

std::pair<size_t, size_t> ring_allreduce::bounds(size_t length, int size, int c) {
  const auto n = static_cast<size_t>(size), i = static_cast<size_t>(c);
  return {length * i / n, length * (i + 1) / n};
}

int ring_allreduce::segments(size_t length, int size, size_t max_chunk) {
  const auto n = static_cast<size_t>(size);
  const size_t per_segment = max_chunk > SIZE_MAX / n ? SIZE_MAX : max_chunk * n;
  return static_cast<int>(std::max<size_t>(1, length / per_segment + (length % per_segment != 0)));
}

size_t ring_allreduce::incoming_length(size_t length, int rank, int size, int r, size_t max_chunk) {
  ring_allreduce shape(rank, size, {}, max_chunk);
  shape.segments_ = segments(length, size, max_chunk);
  const auto [b, e] = shape.span_of(r, true, length);
  return e - b;
}

int ring_allreduce::chunk_of(int r, bool incoming) const {
  // Reduce-scatter round r: rank i sends chunk i - r and receives chunk i - 1 - r; after
  // it rank i holds the whole of chunk i + 1. All-gather round g: rank i sends chunk
  // i + 1 - g (whole) and receives chunk i - g.
  const int shift = r < size_ - 1 ? -r : 1 - (r - (size_ - 1));
  const int c = rank_ + shift - (incoming ? 1 : 0);
  return ((c % size_) + size_) % size_;
}

std::pair<size_t, size_t> ring_allreduce::span_of(int r, bool incoming, size_t length) const {
  const int per_segment = 2 * (size_ - 1);
  if (per_segment == 0) // one rank: no rounds
    return {0, 0};
  const auto [s0, s1] = bounds(length, segments_, r / per_segment); // the segment, in order
  const auto [b, e] = bounds(s1 - s0, size_, chunk_of(r % per_segment, incoming));
  return {s0 + b, s0 + e};
}

ring_allreduce::chunk ring_allreduce::outgoing() const {
  if (done())
    throw std::logic_error("ring_allreduce: nothing to send after the last round");
  const auto [b, e] = span_of(round_, false, values_.size());
  return {round_, std::vector<float>(values_.begin() + static_cast<ptrdiff_t>(b),
                                     values_.begin() + static_cast<ptrdiff_t>(e))};
}

void ring_allreduce::receive(const chunk& c) {
  const auto [b, e] =
      done() ? std::pair<size_t, size_t>{0, 0} : span_of(round_, true, values_.size());
  if (done() || c.round != round_ || c.values.size() != e - b)
    throw std::invalid_argument("ring_allreduce: a chunk of round " + std::to_string(c.round) +
                                " with " + std::to_string(c.values.size()) +
                                " values, expected round " + std::to_string(round_) + " of " +
                                std::to_string(rounds()) + " with " + std::to_string(e - b));
  auto* dst = values_.data() + b;
  if (round_ % (2 * (size_ - 1)) < size_ - 1)
    for (size_t i = 0; i < c.values.size(); ++i)
      dst[i] += c.values[i];
  else
    std::copy(c.values.begin(), c.values.end(), dst);
  ++round_;
}

std::string early_chunk_refusal(const std::vector<ring_round>& waiting, ring_round chunk,
                                size_t values, const ring_position& at) {
  const auto what =
      "round " + std::to_string(chunk.round) + " of step " + std::to_string(chunk.step);
  const int rounds = ring_allreduce::segments(at.length, at.size, at.max_chunk) * 2 * (at.size - 1);
  if (chunk.round < 0 || chunk.round >= rounds)
    return what + ": a ring of " + std::to_string(at.size) + " has " + std::to_string(rounds) +
           " rounds";
  const auto same = [&](const ring_round& w) {
    return w.step == chunk.step && w.round == chunk.round;
  };
  if ((at.reducing && chunk.step == at.last_step && chunk.round < at.applied) ||
      std::any_of(waiting.begin(), waiting.end(), same))
    return what + " came twice";
  if (at.reducing ? chunk.step != at.last_step : chunk.step <= at.last_step)
    return what + (at.reducing ? " while step " : " after step ") + std::to_string(at.last_step) +
           (at.reducing ? " reduces" : " reduced") + ": a ring runs one step at a time";
  for (const auto& w : waiting)
    if (w.step != chunk.step)
      return what + " while rounds of step " + std::to_string(w.step) +
             " wait: a ring runs one step at a time";
  const auto expected =
      ring_allreduce::incoming_length(at.length, at.rank, at.size, chunk.round, at.max_chunk);
  if (values != expected)
    return what + " has " + std::to_string(values) + " values, expected " +
           std::to_string(expected);
  return {};
}

} // namespace deepcee::runtime
