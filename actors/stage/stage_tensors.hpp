#pragma once

#include "actors/stage/stage_actor.hpp"
#include "messages/codec.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <memory>
#include <span>
#include <string>
#include <variant>

/// A stage's tensor send and receive paths: one serialization on the sender (the devices
/// write into the message's payload), one deserialization on the receiver (the payload is
/// read in place), counted in job_context::counts; dry mode's tensors carry headers only.
/// A tensor_msg is its bytes alone: the receiver routes it by the validated header.
namespace deepcee::actors {

using stage_self = stage_actor::stateful_pointer<stage_state>;

/// Decodes and validates a received tensor against what this stage expects: an activation
/// from the previous stage or a gradient from the next one of its own pipeline, for the
/// running or the next step, a micro-batch of the plan's, shaped [b, T, C]. Dry mode's
/// tensors carry no payload (and must not). Returns the tensor, or why it is unusable.
std::variant<accepted_tensor, std::string> accept_tensor(stage_state& st, tensor_msg& msg);

/// The fp32 values of an accepted tensor: its f32 payload read in place (a Data field is
/// word aligned), or the values it was widened to.
std::span<const float> values_of(const received_tensor& t);

/// Opens the message of micro-batch `micro`'s activation (to the next stage) or gradient
/// (to the previous one) of the running step.
outgoing_tensor open_tensor(const stage_state& st, tensor_role role, int micro);

/// Sends a tensor whose op ended at `end_s`, its send time. The header carries the send and
/// arrival times: virtual and dry time ask the link model (and the pipes of shared links,
/// pipe_sync); wall time with shaped links asks the link model in real seconds, and the
/// message leaves at once with its arrival on the steady clock for the receiver to hold it
/// until then (held_by_receiver), or else by a timer when its last part would have arrived;
/// wall time without shaping sends at once and leaves the arrival to the receiver.
void send_tensor(stage_self self, outgoing_tensor& t, double end_s);

/// Shaped wall time: whether stage `k` (flat) holds what this stage sends it until its
/// modelled arrival: one process, or nodes of one host boot (runtime::shaping_side_of over
/// the wiring's boot ids). Otherwise this stage waits until then before it sends.
bool held_by_receiver(stage_self self, int k);

/// Wall mode without shaping: the transfer ends when it is here, so the receiver sets its
/// arrival and reports it (as sent by the neighbour, over the neighbour's parts): when CAF
/// deserialized it (`arrived_ns`, tensor_msg's), else now.
void report_arrival(stage_self self, accepted_tensor& t, int64_t arrived_ns);

} // namespace deepcee::actors
