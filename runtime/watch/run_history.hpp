#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

/// The whole run's figures by step, for a chart opened late: bounded in memory however
/// long the run, by keeping fewer points of the older past as it grows.
namespace deepcee::runtime {

struct series_point {
  int step = 0;
  double value = 0;
  friend bool operator==(const series_point&, const series_point&) = default;
};

/// At most `capacity` points. When full, every other point goes and the spacing kept from
/// then on doubles: the run stays covered evenly from its first step to its last.
class thinned_series {
public:
  explicit thinned_series(size_t capacity = 512) : capacity_(capacity < 2 ? 2 : capacity) {}

  void add(int step, double value);
  const std::vector<series_point>& points() const { return points_; }
  /// The fewest steps between two points kept from now on.
  int spacing() const { return spacing_; }

private:
  size_t capacity_;
  int spacing_ = 1;
  std::vector<series_point> points_;
};

struct run_history {
  thinned_series loss;
  thinned_series validation;
  thinned_series real_samples_per_s;
  thinned_series emulated_samples_per_s;
  std::map<std::string, thinned_series> link_bandwidth_Bps; ///< by link name
};

} // namespace deepcee::runtime
