#pragma once

/// The one list of the messages that cross nodes, for the C++ side; the schema
/// (messages/deepcee.capnp) stays the source for Cap'n Proto. There is one entry per member
/// of the schema's Envelope union, in the union's order, so an entry's position is its
/// member's discriminant. Each entry names once:
/// - the value type of messages/types.hpp that `encode` writes and `decode_<type>` reads;
/// - its message_kind, the Envelope member's name in snake case;
/// - the schema struct that the member holds.
///
/// From the list come message_kind and to_string (types.hpp), the Envelope's discriminant
/// read as a kind (wire.cpp), the decode<T> dispatch (codec.hpp), and in actors/protocol the
/// CAF type IDs and the `inspect` that carries each message as its Cap'n Proto bytes.
/// tests/messages/test_message_list.cpp checks that the list and the schema agree.
///
/// tensor_message, the other value of the Tensor member, has no entry: it is a view into
/// the received bytes (decode_tensor), and the actors carry it as those bytes
/// (actors::tensor_msg), never as a struct of its own.
///
/// X(type, kind, SchemaStruct)
// clang-format off
#define DEEPCEE_WIRE_MESSAGES(X)                                 \
  X(job_deployment,     job_deployment,     JobDeployment)      \
  X(step_start,         step_start,         StepStart)          \
  X(gradient_share,     tensor,             Tensor)             \
  X(link_sample,        link_sample,        LinkSample)         \
  X(step_stats,         step_stats,         StepStats)          \
  X(rebalance,          rebalance,          Rebalance)          \
  X(heartbeat,          heartbeat,          Heartbeat)          \
  X(error_report,       error,              Error)              \
  X(optimize_order,     optimize_order,     OptimizeOrder)      \
  X(stage_report,       stage_report,       StageReport)        \
  X(node_join,          node_join,          NodeJoin)           \
  X(pipe_request,       pipe_request,       PipeRequest)        \
  X(send_horizon,       send_horizon,       SendHorizon)        \
  X(pipe_arrival,       pipe_arrival,       PipeArrival)        \
  X(stage_snapshot,     stage_snapshot,     StageSnapshot)      \
  X(deployment_request, deployment_request, DeploymentRequest)  \
  X(device_rows,        device_rows,        DeviceRows)         \
  X(device_output,      device_output,      DeviceOutput)       \
  X(ring_chunk,         ring_chunk,         RingChunk)          \
  X(gradient_values,    gradient_values,    GradientValues)     \
  X(script_update,      script_update,      ScriptUpdate)
// clang-format on
