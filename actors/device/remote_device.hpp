#pragma once

#include "actors/protocol/interfaces.hpp"
#include "messages/codec.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <string>

namespace deepcee::actors {

/// Stands in a stage's group for one of its devices that runs on another node (a stage whose
/// devices span nodes). Each device_work becomes a device_rows for the device's actor there
/// (the rows it reads, and the tokens and targets of its samples, copied into the message),
/// and the rows of the answer are written where the work says; the rest passes on as it is.
struct remote_device_state {
  static inline const char* name = "remote_device";

  std::string where; ///< "pipeline p stage s device j (node n)", for errors
  device_actor device;
  bool first = false, last = false; ///< the stage reads tokens / targets
  int context = 0;                  ///< tokens per sample
  size_t piece_values = 0;          ///< the most gradient values one message carries
};

/// The rows a device on another node needs for `work` (pure: tested on its own).
device_rows rows_of(const device_work& work, bool first, bool last, int context);

/// `piece_values`: gradients longer than that go to the device in pieces.
device_actor::behavior_type
remote_device_behavior(device_actor::stateful_pointer<remote_device_state> self,
                       device_actor device, std::string where, bool first, bool last, int context,
                       size_t piece_values);

/// Spawns the stand-in for `device`, linked to `parent` (its group).
template <class Parent>
device_actor spawn_remote_device(Parent* parent, device_actor device, std::string where, bool first,
                                 bool last, int context,
                                 size_t piece_values = messages::max_payload_floats) {
  return parent->template spawn<caf::linked>(remote_device_behavior, std::move(device),
                                             std::move(where), first, last, context, piece_values);
}

} // namespace deepcee::actors
