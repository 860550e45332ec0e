#pragma once

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

/// What `deepcee profile --links` publishes on every node of a job: a payload is answered
/// with its size (a transfer timed one way, its reply a few bytes), and the coordinator's
/// node takes each other node's measured links as text ("from to latency_s bandwidth_Bps"
/// lines), answering with the number of nodes still to report.
using link_probe_actor = caf::typed_actor<caf::replies_to<std::string>::with<int64_t>,
                                          caf::replies_to<std::string, std::string>::with<int64_t>>;

/// The rows each node reported (node name, its lines); filled by the probe's handler,
/// read by the coordinator's node's main thread.
class link_reports {
public:
  size_t add(std::string node, std::string rows) {
    std::lock_guard lock(mutex_);
    rows_.emplace_back(std::move(node), std::move(rows));
    return rows_.size();
  }
  std::vector<std::pair<std::string, std::string>> rows() const {
    std::lock_guard lock(mutex_);
    return rows_;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> rows_;
};

/// A probe; on the coordinator's node `reports` (which outlives it) collects the others'
/// rows, elsewhere it is null and reports are refused.
link_probe_actor spawn_link_probe(caf::actor_system& sys, std::shared_ptr<link_reports> reports);

} // namespace deepcee::actors
