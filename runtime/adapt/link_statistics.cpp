#include "runtime/adapt/link_statistics.hpp"

namespace deepcee::runtime {

void link_statistics::add(const link_transfer& t) {
  auto [it, fresh] = links_.try_emplace(t.link);
  auto& l = it->second;
  if (fresh) {
    l.link = t.link;
    l.from = t.from;
    l.to = t.to;
  }
  ++l.transfers;
  l.bytes += t.bytes;
  l.busy_s += t.drained_s - t.start_s;
  l.delay_s += t.arrival_s - t.send_s;
}

} // namespace deepcee::runtime
