#pragma once

#include <vector>

namespace deepcee::runtime {

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

} // namespace deepcee::runtime
