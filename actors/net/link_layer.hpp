#pragma once

#include "actors/protocol/interfaces.hpp"
#include "runtime/sim/virtual_cluster.hpp"

#include <vector>

namespace deepcee::actors {

/// The send path of one stage: every transfer to a neighbour stage crosses its parts'
/// resources here. In virtual time each part waits until every resource on its path (node
/// interfaces, WAN path, a node's internal link) is free, drains at the path's bandwidth
/// and arrives after its latency (runtime::link_fifo); every part becomes a link_sample
/// (`link`: its sharing group) for the adapter. It gets only the sharing groups that this
/// stage alone sends on, so the result does not depend on the host's delivery order; parts
/// of a group that other stages use too (a WAN path or a node's interface crossed by
/// several pipelines) go to that group's pipe actor instead (pipe_sync.hpp, pipe_actor.hpp).
class link_layer {
public:
  void set_adapter(adapter_actor adapter) { adapter_ = std::move(adapter); }

  /// Records the transfer of one micro-batch sent at `send_s` on this stage's own FIFO;
  /// returns when its last part arrives.
  template <class Self>
  double send(Self* self, const std::vector<runtime::transfer_part>& parts, double send_s,
              link_sample meta) {
    return send(self, fifo_, parts, send_s, meta);
  }

  /// The same on `fifo` (a runtime::link_fifo, or anything with its `send`: shaped wall
  /// time's, shared by every stage of the process).
  template <class Self, class Fifo>
  double send(Self* self, Fifo& fifo, const std::vector<runtime::transfer_part>& parts,
              double send_s, link_sample meta) {
    double arrival = send_s;
    for (const auto& part : parts) {
      const auto t = fifo.send(part, send_s);
      arrival = std::max(arrival, t.arrival_s);
      if (adapter_) {
        meta.from = part.from;
        meta.to = part.to;
        meta.link = part.link;
        meta.bytes = part.bytes;
        meta.send_time = send_s;
        meta.start = t.start_s;
        meta.drained = t.drained_s;
        meta.end = t.arrival_s;
        self->send(adapter_, meta);
      }
    }
    return arrival;
  }

  /// Wall mode without shaping: a message really sent at `send_s` that arrived at
  /// `arrival_s`, reported by its receiver (only the receiver sees it arrive). `bytes`, the
  /// message as sent, is split over the parts as the link model splits a transfer; the
  /// parts go to the adapter together, as one message (runtime::real_message).
  template <class Self>
  void report_real(Self* self, const std::vector<runtime::transfer_part>& parts, double bytes,
                   double send_s, double arrival_s, link_sample meta) const {
    if (!adapter_)
      return;
    double modelled = 0;
    for (const auto& part : parts)
      modelled += part.bytes;
    std::vector<link_sample> message;
    for (const auto& part : parts) {
      meta.from = part.from;
      meta.to = part.to;
      meta.link = part.link;
      meta.bytes = modelled > 0 ? bytes * part.bytes / modelled : bytes;
      meta.send_time = meta.start = send_s;
      meta.drained = meta.end = arrival_s;
      message.push_back(meta);
    }
    self->send(adapter_, std::move(message));
  }

private:
  runtime::link_fifo fifo_;
  adapter_actor adapter_;
};

} // namespace deepcee::actors
