#pragma once

#include <chrono>
#include <string>
#include <vector>

/// The rule a node's heartbeat applies at each tick: who is silent, and whether the silence
/// is the node's own. A process stopped (SIGSTOP, a debugger, a stalled host) runs no tick
/// meanwhile; when it resumes, the monotonic clock has jumped, and every peer looks silent
/// though none was. So a tick that comes more than `timeout` after the one before blames
/// no peer: the node says it was suspended and counts its peers' silence from now on.
namespace deepcee::runtime {

using liveness_clock = std::chrono::steady_clock;

struct liveness_verdict {
  /// How long this node itself was away (the gap between two ticks), when it was
  /// suspended; zero otherwise.
  liveness_clock::duration suspended{};
  /// The peers unheard for more than the timeout (indices into the `last_heard` given).
  std::vector<size_t> silent;
};

/// `last_heard` per peer; `previous_tick` the time of the tick before this one (`now`).
/// After a suspension the caller sets every peer's last_heard to `now`.
liveness_verdict judge_liveness(liveness_clock::time_point previous_tick,
                                liveness_clock::time_point now,
                                const std::vector<liveness_clock::time_point>& last_heard,
                                std::chrono::milliseconds timeout);

} // namespace deepcee::runtime
