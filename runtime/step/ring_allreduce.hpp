#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::runtime {

/// One rank's part of a ring all-reduce (sum) of equal-length vectors over `size` ranks:
/// the vector is cut into `size` chunks; in each of 2 (size - 1) rounds every rank sends
/// one chunk to the next rank and receives one from the previous. The first size - 1
/// rounds add (reduce-scatter: rank r ends holding the whole sum of chunk r + 1), the
/// others copy (all-gather). Each chunk is summed in one fixed order and then copied
/// around, so every rank ends with bit-identical sums whatever the timing; each rank sends
/// 2 (size - 1) / size of the vector in all.
///
/// No chunk holds more than `max_chunk` values: a vector longer than size * max_chunk is
/// cut into equal segments that are reduced one after the other, the rounds of each
/// numbered on from the last one's (segments() * 2 (size - 1) rounds in all).
///
/// Pure logic: the caller moves the chunks (device actors, as actor messages).
class ring_allreduce {
public:
  static constexpr size_t unbounded = SIZE_MAX;

  /// Throws std::invalid_argument unless 0 <= rank < size and max_chunk > 0.
  ring_allreduce(int rank, int size, std::vector<float> values, size_t max_chunk = unbounded);

  struct chunk {
    int round = 0;
    std::vector<float> values;
  };

  int rounds() const { return segments_ * 2 * (size_ - 1); }
  bool done() const { return round_ == rounds(); }
  int round() const { return round_; }
  /// What this rank sends to the next one in the current round (not after done()).
  chunk outgoing() const;
  /// Applies what the previous rank sent in the current round and moves to the next one.
  /// Throws std::invalid_argument (naming round and size) for another round or length;
  /// nothing is changed then.
  void receive(const chunk& c);
  const std::vector<float>& values() const { return values_; }
  std::vector<float> take_values() { return std::move(values_); }

  /// [begin, end) of chunk `c` of a vector of `length` values cut into `size` chunks.
  static std::pair<size_t, size_t> bounds(size_t length, int size, int c);
  /// How many values rank `rank` of `size` receives in round `r` for vectors of `length`.
  static size_t incoming_length(size_t length, int rank, int size, int r,
                                size_t max_chunk = unbounded);
  /// How many segments a vector of `length` values takes (at least 1).
  static int segments(size_t length, int size, size_t max_chunk);

private:
  /// The chunk this rank sends (`incoming` false) or receives in round `r`, within its
  /// segment.
  int chunk_of(int r, bool incoming) const;
  /// [begin, end) of what this rank sends or receives in round `r` of a ring over
  /// `length` values.
  std::pair<size_t, size_t> span_of(int r, bool incoming, size_t length) const;

  int rank_, size_, segments_ = 1, round_ = 0;
  std::vector<float> values_;
};

/// A ring chunk named by the step it reduces and its round.
struct ring_round {
  int64_t step = 0;
  int round = 0;
};

/// Where a rank's ring stands when a chunk arrives that it cannot apply yet.
struct ring_position {
  int rank = 0, size = 1;
  size_t length = 0;      ///< values the ring reduces
  int64_t last_step = -1; ///< the step it reduces, or reduced last (-1: none yet)
  int applied = 0;        ///< rounds of `last_step` applied, while it reduces
  size_t max_chunk = ring_allreduce::unbounded;
  bool reducing = false; ///< `last_step` is still being reduced
};

/// Whether a chunk of `values` values may wait beside `waiting` until its round comes, or
/// why not (empty: it may). Honest peers send each round once, with the length that round
/// carries, of one step at a time: the step this rank reduces, or, between its reduces, a
/// later one (the next, or any after a resume); so the rounds of one step wait, at most.
std::string early_chunk_refusal(const std::vector<ring_round>& waiting, ring_round chunk,
                                size_t values, const ring_position& at);

} // namespace deepcee::runtime
