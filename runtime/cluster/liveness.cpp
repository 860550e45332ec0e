#include "runtime/cluster/liveness.hpp"

namespace deepcee::runtime {

liveness_verdict judge_liveness(liveness_clock::time_point previous_tick,
                                liveness_clock::time_point now,
                                const std::vector<liveness_clock::time_point>& last_heard,
                                std::chrono::milliseconds timeout) {
  liveness_verdict v;
  if (now - previous_tick > timeout) {
    v.suspended = now - previous_tick;
    return v;
  }
  for (size_t i = 0; i < last_heard.size(); ++i)
    if (now - last_heard[i] > timeout)
      v.silent.push_back(i);
  return v;
}

} // namespace deepcee::runtime
