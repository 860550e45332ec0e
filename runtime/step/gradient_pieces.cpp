#include "runtime/step/gradient_pieces.hpp"

#include <stdexcept>
#include <utility>

namespace deepcee::runtime {

std::optional<std::vector<float>> gradient_pieces::add(int64_t step, int64_t offset,
                                                       std::vector<float> piece, size_t total) {
  if (offset == 0 && piece.size() == total) {
    values_.clear();
    return piece;
  }
  if (offset == 0) {
    values_.clear();
    step_ = step;
  }
  if (step != step_ || offset != static_cast<int64_t>(values_.size()) ||
      piece.size() > total - values_.size())
    throw std::invalid_argument("gradients of step " + std::to_string(step) + " from " +
                                std::to_string(offset) + " (" + std::to_string(piece.size()) +
                                " values): expected step " + std::to_string(step_) + " from " +
                                std::to_string(values_.size()) + " of " + std::to_string(total));
  values_.insert(values_.end(), piece.begin(), piece.end());
  if (values_.size() < total)
    return std::nullopt;
  return std::exchange(values_, {});
}

std::string gradient_pieces::unfinished(int64_t step, size_t total) const {
  if (values_.empty())
    return {};
  return "step " + std::to_string(step) + ": gradients of step " + std::to_string(step_) +
         " incomplete (" + std::to_string(values_.size()) + " of " + std::to_string(total) +
         " values)";
}

} // namespace deepcee::runtime
