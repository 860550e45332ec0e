#pragma once

#include "actors/protocol/protocol.hpp"
#include "messages/message_list.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/type_id.hpp>

#include <atomic>
#include <cstdint>

/// The one CAF type-ID block of every type that crosses actors (STYLE point 3): the
/// messages of the schema (messages/message_list.hpp) and the values of actors/protocol.hpp.
CAF_BEGIN_TYPE_ID_BLOCK(deepcee, caf::first_custom_type_id)

CAF_ADD_ATOM(deepcee, deepcee::actors, step_atom, "step")
CAF_ADD_ATOM(deepcee, deepcee::actors, wire_atom, "wire")
CAF_ADD_ATOM(deepcee, deepcee::actors, links_atom, "links")
CAF_ADD_ATOM(deepcee, deepcee::actors, samples_atom, "samples")
CAF_ADD_ATOM(deepcee, deepcee::actors, await_atom, "await")
CAF_ADD_ATOM(deepcee, deepcee::actors, timeout_atom, "timeout")
CAF_ADD_ATOM(deepcee, deepcee::actors, stop_atom, "stop")
CAF_ADD_ATOM(deepcee, deepcee::actors, peer_atom, "peer")

// Every message of the schema (messages/message_list.hpp): between nodes, its Cap'n Proto
// bytes (actors/protocol/wire_format.hpp).
#define DEEPCEE_WIRE_TYPE_ID(type, kind, schema) CAF_ADD_TYPE_ID(deepcee, (deepcee::messages::type))
DEEPCEE_WIRE_MESSAGES(DEEPCEE_WIRE_TYPE_ID)
#undef DEEPCEE_WIRE_TYPE_ID

CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::tensor_msg))
CAF_ADD_TYPE_ID(deepcee, (deepcee::messages::op_record))
CAF_ADD_TYPE_ID(deepcee, (deepcee::runtime::link_report))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::stage_wiring))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::step_result))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::joining_node))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::messages::op_record>))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::messages::link_sample>))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::runtime::link_report>))
CAF_ADD_ATOM(deepcee, deepcee::actors, snapshot_atom, "snapshot")
CAF_ADD_ATOM(deepcee, deepcee::actors, restore_atom, "restore")
CAF_ADD_TYPE_ID(deepcee, (deepcee::runtime::parameter_tensor))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::runtime::parameter_tensor>))
CAF_ADD_ATOM(deepcee, deepcee::actors, interrupt_atom, "interrupt")

// A stage, its group and its devices (device_work and device_buffers: in-process only).
CAF_ADD_ATOM(deepcee, deepcee::actors, reduce_atom, "reduce")
CAF_ADD_ATOM(deepcee, deepcee::actors, ring_atom, "ring")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_work))
CAF_ADD_ATOM(deepcee, deepcee::actors, buffers_atom, "buffers")
CAF_ADD_ATOM(deepcee, deepcee::actors, gradients_atom, "gradients")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_buffers))
CAF_ADD_TYPE_ID(deepcee, (std::vector<float>))
// A stage's devices on other nodes (remote_device.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, digest_atom, "digest")
CAF_ADD_ATOM(deepcee, deepcee::actors, devices_atom, "devices")
CAF_ADD_ATOM(deepcee, deepcee::actors, squares_atom, "squares")
// The coordinator's node telling the other nodes how far the job is (heartbeat_actor.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, progress_atom, "progress")
// The adapter's log of decisions (adapter_actor.hpp).
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::adapt_record))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::actors::adapt_record>))
CAF_ADD_ATOM(deepcee, deepcee::actors, decisions_atom, "decisions")
// A running job's script once events were injected (`deepcee inject`).
CAF_ADD_ATOM(deepcee, deepcee::actors, inject_atom, "inject")
// Re-plans: the order (adapter -> coordinator -> adapter), and a new stage taking its
// layers' state from the old stages (stage_actor.hpp).
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::replan_order))
CAF_ADD_ATOM(deepcee, deepcee::actors, move_atom, "move")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::layer_holders))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::job_in_force))
CAF_ADD_ATOM(deepcee, deepcee::actors, plan_atom, "plan")
// A stage's op held back in wall time by a script's slowdown or stop (stage_actor.cpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, slowed_atom, "slowed")
// Shaped wall time: a receiver's held messages are due (runtime/step/shaped_delivery.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, release_atom, "release")
// A node of the job is lost (killed, partitioned, silent): heartbeat -> coordinator, and a
// stage told to drop the step in flight (coordinator.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, lost_atom, "lost")
// Each node's host boot, from a stage to its group (stage_wiring::boot_ids).
CAF_ADD_TYPE_ID(deepcee, (std::vector<std::string>))
// Peer snapshots: the coordinator's order to a stage, its copy to a keeper, and the keeper's
// word to the coordinator (actors/stage/stage_snapshots.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, keep_atom, "keep")
CAF_ADD_ATOM(deepcee, deepcee::actors, kept_atom, "kept")
// Active probes in wall time, between nodes' replanners (node_replanner.hpp).
CAF_ADD_ATOM(deepcee, deepcee::actors, probe_atom, "probe")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::probe_msg))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::probe_times))

CAF_END_TYPE_ID_BLOCK(deepcee)

namespace deepcee::actors {

/// Registers the block and deepcee's error category (actors/errors.hpp).
void register_types(caf::actor_system_config& cfg);

/// The configuration of every actor system of deepcee, used by main and by every test
/// fixture alike: register_types, and what the system's message loaders count.
///
/// The count of refused messages lives here, one per actor system, instead of in a
/// process-wide counter: a loader runs inside CAF's middleman, which gives it no actor to
/// count in, but its deserializer's execution unit knows the actor system, and the system
/// knows its config (actors/wire_format.hpp). Decoding in the receiving handlers instead
/// would have made every message cross as bytes in a process too.
class system_config : public caf::actor_system_config {
public:
  system_config();

  /// Messages from other nodes whose bytes the codec refused so far.
  int64_t dropped_wire_messages() const { return dropped_.load(); }

  /// Counts one more refused message (from a loader, which sees the config as const);
  /// returns the count so far.
  int64_t count_dropped() const { return ++dropped_; }

private:
  mutable std::atomic<int64_t> dropped_{0};
};

} // namespace deepcee::actors
