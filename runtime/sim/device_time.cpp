#include "runtime/sim/device_time.hpp"

#include "runtime/sim/simulator.hpp"

#include <cmath>

namespace deepcee::runtime {

double work_duration_or_stop(const std::vector<device_piece>& rates, double start_s, double work_s,
                             const std::string& node) {
  const double dt = work_duration(rates, start_s, work_s);
  if (!std::isfinite(dt))
    throw job_stopped(stopped_message(rates, node));
  return dt;
}

} // namespace deepcee::runtime
