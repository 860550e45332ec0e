#pragma once

#include "actors/stage_actor.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <functional>
#include <span>
#include <string>

/// A stage's tensor send and receive paths: one serialization on the sender (the devices
/// write into the message's payload), one deserialization on the receiver (the payload is
/// read in place), counted in job_context::counts; dry mode's tensors carry headers only.
namespace deepcee::actors {

using stage_self = stage_actor::stateful_pointer<stage_state>;

/// Decodes and validates a received tensor against what this stage expects (its pipeline,
/// the neighbour that sends this role, the routing fields, [b, T, C]); fills msg.decoded
/// (and msg.values when the payload travelled compressed). Dry mode's tensors carry no
/// payload. Returns why it is unusable, or an empty string.
std::string accept_tensor(stage_state& st, tensor_msg& msg);

/// The fp32 values of an accepted tensor: its f32 payload read in place (a Data field is
/// word aligned), or the values it was widened to.
std::span<const float> values_of(const tensor_msg& msg);

/// Writes one op's output [b, T, C] into `out`; wall mode measures the op's end inside.
using compute_fn = std::function<void(std::span<float> out)>;

/// Computes the tensor of an op straight into a new message to the neighbour and sends it.
/// `end_s` is the op's end, the send time: given in virtual and dry time, measured once
/// `compute` returns in wall time. Dry mode sends the header alone. In wall mode with
/// shaped links the message leaves by a timer when the link model says it has arrived.
void send_tensor(stage_self self, tensor_role role, int micro, double& end_s,
                 const compute_fn& compute);

/// Wall mode without shaping: the transfer ends when it is here, so the receiver reports it
/// (as sent by the neighbour, over the neighbour's parts).
void report_arrival(stage_self self, tensor_msg& msg);

} // namespace deepcee::actors
