#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

namespace deepcee::runtime {

/// Values that each take effect from a step on: allocations, plans, scripts and orders.
/// One place says which value is in force at step n: the latest put at or before n.
template <class T>
class step_ordered {
public:
  using map_type = std::map<int64_t, T>;

  /// Puts `value` in force from `step` on, replacing one put for the same step.
  void put(int64_t step, T value) { entries_.insert_or_assign(step, std::move(value)); }

  /// The value in force at `step`, or nullptr when none was put at or before it.
  const T* in_force_at(int64_t step) const {
    auto it = entries_.upper_bound(step);
    return it == entries_.begin() ? nullptr : &std::prev(it)->second;
  }

  /// The value in force at `step`, or `fallback` when none was put at or before it.
  const T& in_force_at(int64_t step, const T& fallback) const {
    const T* value = in_force_at(step);
    return value ? *value : fallback;
  }

  /// Takes the value in force at `step` and drops every entry up to it: what was due by
  /// then is used once, and what was put for later steps stays.
  std::optional<T> take_due(int64_t step) {
    auto end = entries_.upper_bound(step);
    if (end == entries_.begin())
      return std::nullopt;
    std::optional<T> due = std::move(std::prev(end)->second);
    entries_.erase(entries_.begin(), end);
    return due;
  }

  /// Drops every entry put at or before `step`.
  void drop_through(int64_t step) { entries_.erase(entries_.begin(), entries_.upper_bound(step)); }

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }
  const map_type& entries() const { return entries_; }

private:
  map_type entries_;
};

} // namespace deepcee::runtime
