#pragma once

#include "actors/checkpoint_messages.hpp"
#include "actors/deployment_messages.hpp"
#include "actors/device_messages.hpp"
#include "actors/messages.hpp"
#include "actors/pipe_messages.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/type_id.hpp>

/// The one CAF type-ID block of every type that crosses actors (STYLE point 3). It lives
/// in actors/ while messages/ (Cap'n Proto codecs) is being written; it moves to
/// messages/type_ids.hpp when the payloads become Cap'n Proto messages.
CAF_BEGIN_TYPE_ID_BLOCK(deepcee, caf::first_custom_type_id)

CAF_ADD_ATOM(deepcee, deepcee::actors, step_atom, "step")
CAF_ADD_ATOM(deepcee, deepcee::actors, wire_atom, "wire")
CAF_ADD_ATOM(deepcee, deepcee::actors, links_atom, "links")
CAF_ADD_ATOM(deepcee, deepcee::actors, samples_atom, "samples")
CAF_ADD_ATOM(deepcee, deepcee::actors, await_atom, "await")
CAF_ADD_ATOM(deepcee, deepcee::actors, timeout_atom, "timeout")
CAF_ADD_ATOM(deepcee, deepcee::actors, stop_atom, "stop")
CAF_ADD_ATOM(deepcee, deepcee::actors, peer_atom, "peer")

CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::step_order))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::tensor_msg))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::grad_share))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::op_record))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::stage_report))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::optimize_order))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::link_sample))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::link_summary))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::stage_wiring))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::step_result))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::node_join))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::heartbeat))
// Shared links in virtual time (pipe_actor.hpp).
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::pipe_request))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::send_horizon))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::pipe_arrival))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::actors::op_record>))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::actors::link_sample>))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::actors::link_summary>))
CAF_ADD_ATOM(deepcee, deepcee::actors, snapshot_atom, "snapshot")
CAF_ADD_ATOM(deepcee, deepcee::actors, restore_atom, "restore")
CAF_ADD_TYPE_ID(deepcee, (deepcee::kernels::parameter_state))
CAF_ADD_TYPE_ID(deepcee, (std::vector<deepcee::kernels::parameter_state>))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::stage_snapshot))
// Job deployment of a multi-process job (deployment_messages.hpp).
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::deployment_request))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::job_deployment))
CAF_ADD_ATOM(deepcee, deepcee::actors, interrupt_atom, "interrupt")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::node_error))

// A stage, its group and its devices (device_messages.hpp; in-process only).
CAF_ADD_ATOM(deepcee, deepcee::actors, reduce_atom, "reduce")
CAF_ADD_ATOM(deepcee, deepcee::actors, ring_atom, "ring")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_work))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::ring_chunk))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::gradient_values))
CAF_ADD_ATOM(deepcee, deepcee::actors, buffers_atom, "buffers")
CAF_ADD_ATOM(deepcee, deepcee::actors, gradients_atom, "gradients")
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_buffers))
CAF_ADD_TYPE_ID(deepcee, (std::vector<float>))
// A stage's devices on other nodes (remote_device.hpp).
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_rows))
CAF_ADD_TYPE_ID(deepcee, (deepcee::actors::device_output))
CAF_ADD_ATOM(deepcee, deepcee::actors, digest_atom, "digest")
CAF_ADD_ATOM(deepcee, deepcee::actors, devices_atom, "devices")
CAF_ADD_ATOM(deepcee, deepcee::actors, squares_atom, "squares")

CAF_END_TYPE_ID_BLOCK(deepcee)

namespace deepcee::actors {

/// Registers the block; called by main and by every test fixture alike.
void register_types(caf::actor_system_config& cfg);

} // namespace deepcee::actors
