#pragma once

#include <cstddef>
#include <cstdint>
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
/// Pure logic: the caller moves the chunks (device actors, as actor messages).
class ring_allreduce {
public:
  /// Throws std::invalid_argument unless 0 <= rank < size.
  ring_allreduce(int rank, int size, std::vector<float> values);

  struct chunk {
    int round = 0;
    std::vector<float> values;
  };

  int rounds() const { return 2 * (size_ - 1); }
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

private:
  /// The chunk this rank sends (`incoming` false) or receives in round `r`.
  int chunk_of(int r, bool incoming) const;

  int rank_, size_, round_ = 0;
  std::vector<float> values_;
};

} // namespace deepcee::runtime
