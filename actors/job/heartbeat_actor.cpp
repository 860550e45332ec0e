#include "actors/job/heartbeat_actor.hpp"
#include "actors/protocol/wire_format.hpp"
#include "runtime/cluster/liveness.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace deepcee::actors {

namespace {

using self_ptr = heartbeat_actor::stateful_pointer<heartbeat_state>;
using clock_type = std::chrono::steady_clock;

std::string seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

void report_losses(self_ptr self) {
  auto& st = self->state;
  if (!st.notify)
    return;
  for (auto& [name, why] : st.unreported)
    caf::anon_send(st.notify, lost_atom_v, name, why);
  st.unreported.clear();
}

/// Peer `k` fell silent: it is dropped, and reported as lost.
void lose_peer(self_ptr self, size_t k) {
  auto& st = self->state;
  const auto name = st.peers[k].name;
  st.peers.erase(st.peers.begin() + static_cast<ptrdiff_t>(k));
  st.lost.push_back(name);
  st.unreported.emplace_back(name, "no heartbeat for " + seconds(st.timeout) + " s");
  report_losses(self);
}

void beat(self_ptr self, const caf::strong_actor_ptr& to) {
  auto& st = self->state;
  const double t = std::chrono::duration<double>(clock_type::now() - st.started).count();
  self->send(caf::actor_cast<heartbeat_actor>(to),
             heartbeat{.node = st.node, .sequence = ++st.sequence, .time = t});
}

void tick(self_ptr self) {
  auto& st = self->state;
  const auto now = clock_type::now();
  if (now < st.quiet_until) // a re-plan moves state: silence is the move's
    for (auto& p : st.peers)
      p.last_heard = now;
  std::vector<clock_type::time_point> heard;
  for (const auto& p : st.peers)
    heard.push_back(p.last_heard);
  const auto verdict = runtime::judge_liveness(st.last_tick, now, heard, st.timeout);
  st.last_tick = now;
  if (verdict.suspended > clock_type::duration{}) { // this node's own silence, not its peers'
    std::fprintf(
        stderr,
        "node %s: this node was suspended for %s s (stopped, e.g. by SIGSTOP, or "
        "starved): its peers' silence meanwhile is not theirs\n",
        st.node.c_str(),
        seconds(std::chrono::duration_cast<std::chrono::milliseconds>(verdict.suspended)).c_str());
    for (auto& p : st.peers)
      p.last_heard = now;
  }
  for (auto& p : st.peers)
    if (p.handle)
      beat(self, p.handle);
  for (auto k = verdict.silent.rbegin(); k != verdict.silent.rend(); ++k) // the last first
    lose_peer(self, *k);
  self->delayed_send(self, st.interval, timeout_atom_v);
}

/// A re-plan's moves start (`ms`: the longest they may take) or end (0). From this node (its
/// coordinator) it goes on to every peer.
void quiet(self_ptr self, int64_t ms) {
  auto& st = self->state;
  const auto now = clock_type::now();
  st.quiet_until = now + std::chrono::milliseconds(ms);
  for (auto& p : st.peers)
    p.last_heard = std::max(p.last_heard, now);
  const auto& from = self->current_sender();
  if (from && from->node() != self->node())
    return;
  for (const auto& p : st.peers)
    if (p.handle)
      self->send(caf::actor_cast<heartbeat_actor>(p.handle), move_atom_v, ms);
}

heartbeat_peer* find(heartbeat_state& st, const std::string& name) {
  for (auto& p : st.peers)
    if (p.name == name)
      return &p;
  return nullptr;
}

heartbeat_actor::behavior_type heartbeat_behavior(self_ptr self, std::string node,
                                                  std::chrono::milliseconds interval,
                                                  std::chrono::milliseconds timeout,
                                                  std::vector<std::string> expect,
                                                  caf::actor notify) {
  self->set_default_handler(drop_unexpected);
  auto& st = self->state;
  st.node = std::move(node);
  st.interval = interval;
  st.timeout = timeout;
  st.started = clock_type::now();
  st.last_tick = st.started;
  st.notify = std::move(notify);
  for (auto& name : expect)
    st.peers.push_back({.name = std::move(name), .handle = nullptr, .last_heard = st.started});
  self->send(self, timeout_atom_v);
  return {
      [self](const heartbeat& h) {
        auto& s = self->state;
        auto* p = find(s, h.node);
        if (!p && std::count(s.lost.begin(), s.lost.end(), h.node)) {
          self->send(caf::actor_cast<heartbeat_actor>(self->current_sender()), lost_atom_v,
                     "node " + s.node + " heard no heartbeat from this node for " +
                         seconds(s.timeout) +
                         " s, and the job went on without it: it is out of the job");
          return;
        }
        if (!p) {
          spdlog::warn("{}: heartbeat from node '{}', which is no peer of this node", s.node,
                       h.node);
          return;
        }
        p->last_heard = clock_type::now();
        if (!p->handle) { // answer at once: the peer counts its silence from our join
          p->handle = self->current_sender();
          if (p->handle)
            beat(self, p->handle);
        }
      },
      [self](peer_atom, std::string& name, caf::strong_actor_ptr& handle) {
        auto& s = self->state;
        auto* p = find(s, name);
        if (p)
          p->handle = std::move(handle);
        else
          p = &s.peers.emplace_back(heartbeat_peer{
              .name = name, .handle = std::move(handle), .last_heard = clock_type::now()});
        if (p->handle) // a new peer hears from us at once
          beat(self, p->handle);
      },
      [self](stop_atom, caf::actor& target) {
        self->state.notify = std::move(target);
        report_losses(self);
      },
      [self](lost_atom, std::string& why) { // this node is out of the job
        auto& s = self->state;
        s.unreported.emplace_back(s.node, std::move(why));
        report_losses(self);
      },
      [self](timeout_atom) { tick(self); },
      [self](move_atom, int64_t ms) { quiet(self, ms); },
      [self](progress_atom, int64_t step, int64_t steps, double loss, double rate, double clock) {
        auto& s = self->state;
        const auto& from = self->current_sender();
        if (from && from->node() != self->node()) { // the coordinator's node: show it
          if (s.notify)
            caf::anon_send(s.notify, progress_atom_v, step, steps, loss, rate, clock);
          return;
        }
        for (const auto& p : s.peers) // this node's job: tell the others
          if (p.handle)
            self->send(caf::actor_cast<heartbeat_actor>(p.handle), progress_atom_v, step, steps,
                       loss, rate, clock);
      },
  };
}

} // namespace

heartbeat_actor spawn_heartbeat(caf::actor_system& sys, std::string node,
                                std::chrono::milliseconds interval,
                                std::chrono::milliseconds timeout, std::vector<std::string> expect,
                                caf::actor notify) {
  return sys.spawn(heartbeat_behavior, std::move(node), interval, timeout, std::move(expect),
                   std::move(notify));
}

} // namespace deepcee::actors
