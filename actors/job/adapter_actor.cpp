#include "actors/job/adapter_actor.hpp"
#include "actors/protocol/wire_format.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace deepcee::actors {

namespace {

using self_ptr = adapter_actor::stateful_pointer<adapter_state>;

adapter_actor::behavior_type adapter_behavior(self_ptr self) {
  self->set_default_handler(drop_unexpected);
  return {
      [=](const link_sample& s) {
        auto& st = self->state;
        auto [it, fresh] = st.links.try_emplace(s.link);
        auto& l = it->second;
        if (fresh) {
          l.link = s.link;
          l.from_device = s.from;
          l.to_device = s.to;
        }
        ++l.transfers;
        l.bytes += s.bytes;
        l.busy_s += s.drained - s.start;
        st.delay_sum[s.link] += s.end - s.send_time;
        l.mean_delay_s = st.delay_sum[s.link] / static_cast<double>(l.transfers);
        l.bandwidth_Bps = l.busy_s > 0 ? l.bytes / l.busy_s : 0.0;
        if (st.samples.size() < st.max_samples)
          st.samples.push_back(s);
      },
      [=](links_atom) {
        std::vector<link_summary> out;
        for (const auto& [id, l] : self->state.links)
          out.push_back(l);
        return out;
      },
      [=](samples_atom) { return self->state.samples; },
  };
}

} // namespace

adapter_actor spawn_adapter(caf::actor_system& sys) {
  return sys.spawn(adapter_behavior);
}

} // namespace deepcee::actors
