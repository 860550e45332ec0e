#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// A device's gradients as they arrive: whole, or in pieces (a stage too large for one
/// message between nodes sends them in order, each with its offset), joined until the last
/// piece is there. A piece at offset 0 starts a new series, forgetting an unfinished one.
///
/// Pure logic: the device actor receives the pieces and sets what add() returns.
class gradient_pieces {
public:
  /// Takes `piece` of the gradients of `step`, starting at value `offset` of `total`. Returns
  /// the whole gradients once the last piece is there (`piece` itself when it is whole),
  /// else nothing. Throws std::invalid_argument naming what it expected for a piece of
  /// another step than the series', at another offset than the next one, or running past
  /// `total`; the series is left as it was then (restarted, for offset 0).
  std::optional<std::vector<float>> add(int64_t step, int64_t offset, std::vector<float> piece,
                                        size_t total);

  /// Why an optimizer step `step` may not run on a device of `total` gradient values (empty:
  /// it may): a series of pieces is unfinished, so the gradients are not those of one step.
  std::string unfinished(int64_t step, size_t total) const;

  size_t size() const { return values_.size(); } ///< values of the unfinished series
  int64_t step() const { return step_; }         ///< of the series; -1: none started

private:
  std::vector<float> values_;
  int64_t step_ = -1;
};

} // namespace deepcee::runtime
