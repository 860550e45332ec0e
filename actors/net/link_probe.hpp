#pragma once

#include "actors/protocol/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors {

/// What `deepcee profile --links` publishes on every node of a job: a payload is answered
/// with its size (a transfer timed one way, its reply a few bytes); a later node of the job
/// that has connected to this one introduces its own probe (`peer`, its name, the probe), so
/// that this node never dials it (link_peers); and a node takes another node's measured
/// links as text ("from to latency_s bandwidth_Bps" lines), answering with the number of
/// nodes that have reported: the coordinator's node gathers every other node's, and each
/// other node takes the previous node's as its turn to time its own links.
using link_probe_actor =
    caf::typed_actor<caf::replies_to<std::string>::with<int64_t>,
                     caf::replies_to<peer_atom, std::string, caf::strong_actor_ptr>::with<int64_t>,
                     caf::replies_to<std::string, std::string>::with<int64_t>>;

/// The probes that later nodes introduced, by node name; filled by the probe's handler, read
/// by the node's main thread. Two nodes must not dial each other at the same moment: CAF's
/// BASP then keeps on each side the connection it accepted and closes the one it opened as
/// redundant, so both connections close and requests between the two wait out their timeout.
/// So, as between the members of `deepcee node`, the later node dials the earlier one and
/// introduces its probe over that connection.
class link_peers {
public:
  void add(std::string node, link_probe_actor probe) {
    std::lock_guard lock(mutex_);
    probes_.insert_or_assign(std::move(node), std::move(probe));
  }
  std::optional<link_probe_actor> find(const std::string& node) const {
    std::lock_guard lock(mutex_);
    const auto it = probes_.find(node);
    return it == probes_.end() ? std::nullopt : std::optional<link_probe_actor>(it->second);
  }

private:
  mutable std::mutex mutex_;
  std::map<std::string, link_probe_actor> probes_;
};

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

/// A probe; `peers` (which outlives it) collects the probes later nodes introduce;
/// `reports` (which outlives it) collects the rows other nodes send; when null, they are
/// refused.
link_probe_actor spawn_link_probe(caf::actor_system& sys, std::shared_ptr<link_peers> peers,
                                  std::shared_ptr<link_reports> reports);

} // namespace deepcee::actors
