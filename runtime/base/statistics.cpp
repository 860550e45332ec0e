#include "runtime/base/statistics.hpp"

#include <algorithm>

namespace deepcee::runtime {

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace deepcee::runtime
