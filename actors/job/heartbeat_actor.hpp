#pragma once

#include "actors/protocol/interfaces.hpp"

#include <caf/actor.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace deepcee::actors {

/// A peer as the heartbeat actor sees it. `handle` is empty until known: a node learns the
/// coordinator's node's heartbeat actor from the first heartbeat it receives.
struct heartbeat_peer {
  std::string name;
  caf::strong_actor_ptr handle;
  std::chrono::steady_clock::time_point last_heard;
};

/// Every node of a multi-process job and the coordinator's node exchange heartbeats (a
/// star: each node with the coordinator's node). A connection that stays open while its
/// peer hangs (a stopped process, a stalled host, a partition) delivers no down message, so
/// silence is the only sign: a peer unheard for `timeout` is lost. `notify` is told
/// (lost_atom, name, "no heartbeat for T s") once, and the peer is dropped. A lost peer that
/// beats again (it was stopped and resumed, or its partition healed) is told it is out of
/// the job (lost_atom, why); its heartbeat tells its own `notify` (lost_atom, its own name,
/// why), and the node leaves. `(move, ms)` from its own node (the coordinator, as a
/// re-plan's moves start) makes silence count for nothing for `ms` and goes on to every
/// peer; `(move, 0)` ends that once the moves are done: silence counts from then.
struct heartbeat_state {
  static inline const char* name = "heartbeat";
  std::string node; ///< this node's name
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds timeout{5000};
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point last_tick; ///< a late tick means this node was stopped
  uint64_t sequence = 0;
  std::vector<heartbeat_peer> peers;
  caf::actor notify; ///< told (lost_atom, name, reason) when a peer falls silent
  /// Peers lost before `notify` was known, with why: told once it is.
  std::vector<std::pair<std::string, std::string>> unreported;
  std::vector<std::string> lost; ///< peers declared lost
  /// Until then every peer counts as heard: a re-plan moves state over the connections that
  /// carry the heartbeats, and a move of many megabytes over a slow link delays them.
  std::chrono::steady_clock::time_point quiet_until;
};

/// `expect` are peers that must be heard from at once (a node expects the coordinator's
/// node, counted from now); the coordinator's node adds the others as they join (`peer`).
/// Runs on the scheduler, not detached: CAF 0.17 keeps an actor whose handle crossed a node
/// in its registry, and a detached actor's thread then never ends, so the process would hang
/// at exit. A compute handler can therefore delay a beat by one op: keep heartbeat_timeout
/// well above the longest op.
heartbeat_actor spawn_heartbeat(caf::actor_system& sys, std::string node,
                                std::chrono::milliseconds interval,
                                std::chrono::milliseconds timeout, std::vector<std::string> expect,
                                caf::actor notify = {});

} // namespace deepcee::actors
