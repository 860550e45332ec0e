#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "messages/codec.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace deepcee::actors {

/// Shaped wall time's emulated link from a stage's node to its device on another node, and
/// the job's clock.
struct shaped_round_trip {
  std::shared_ptr<const job_context> job;
  std::vector<runtime::link_timeline::piece> link;
};

/// Stands in a stage's group for one of its devices that runs on another node (a stage whose
/// devices span nodes). Each device_work becomes a device_rows for the device's actor there
/// (the rows it reads, and the tokens and targets of its samples, copied into the message),
/// and the rows of the answer are written where the work says; the rest passes on as it is.
/// In shaped wall time the answer to an op is held until the op's work and answer would have
/// crossed the emulated link (apart_answer_s): the real messages take their time inside it.
struct remote_device_state {
  static inline const char* name = "remote_device";

  std::string where; ///< "pipeline p stage s device j (node n)", for errors
  device_actor device;
  bool first = false, last = false;                ///< the stage reads tokens / targets
  int context = 0;                                 ///< tokens per sample
  size_t piece_values = 0;                         ///< the most gradient values one message carries
  std::shared_ptr<const shaped_round_trip> shaped; ///< null: no hold
  /// Answers held until their emulated arrival, by number.
  std::map<uint64_t, std::pair<caf::typed_response_promise<double>, double>> held;
  uint64_t next_held = 0;
};

/// The rows a device on another node needs for `work` (pure: tested on its own).
device_rows rows_of(const device_work& work, bool first, bool last, int context);

/// `piece_values`: gradients longer than that go to the device in pieces; `shaped`: shaped
/// wall time's link to the device (null otherwise).
device_actor::behavior_type
remote_device_behavior(device_actor::stateful_pointer<remote_device_state> self,
                       device_actor device, std::string where, bool first, bool last, int context,
                       size_t piece_values, std::shared_ptr<const shaped_round_trip> shaped);

/// Spawns the stand-in for `device`, linked to `parent` (its group).
template <class Parent>
device_actor spawn_remote_device(Parent* parent, device_actor device, std::string where, bool first,
                                 bool last, int context,
                                 std::shared_ptr<const shaped_round_trip> shaped = nullptr,
                                 size_t piece_values = messages::max_payload_floats) {
  return parent->template spawn<caf::linked>(remote_device_behavior, std::move(device),
                                             std::move(where), first, last, context, piece_values,
                                             std::move(shaped));
}

} // namespace deepcee::actors
