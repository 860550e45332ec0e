#pragma once

#include "actors/stage_actor.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <functional>
#include <span>
#include <string>
#include <variant>

/// A stage's tensor send and receive paths: one serialization on the sender (the devices
/// write into the message's payload), one deserialization on the receiver (the payload is
/// read in place), counted in job_context::counts; dry mode's tensors carry headers only.
/// A tensor_msg is its bytes alone: the receiver routes it by the validated header.
namespace deepcee::actors {

using stage_self = stage_actor::stateful_pointer<stage_state>;

/// A received tensor after validation, routed by its header.
struct accepted_tensor {
  tensor_role role = tensor_role::activation;
  int64_t step = 0;
  int micro = 0;
  received_tensor tensor;
};

/// Decodes and validates a received tensor against what this stage expects: an activation
/// from the previous stage or a gradient from the next one of its own pipeline, for the
/// running or the next step, a micro-batch of the plan's, shaped [b, T, C]. Dry mode's
/// tensors carry no payload (and must not). Returns the tensor, or why it is unusable.
std::variant<accepted_tensor, std::string> accept_tensor(stage_state& st, tensor_msg& msg);

/// The fp32 values of an accepted tensor: its f32 payload read in place (a Data field is
/// word aligned), or the values it was widened to.
std::span<const float> values_of(const received_tensor& t);

/// Writes one op's output [b, T, C] into `out`; wall mode measures the op's end inside.
using compute_fn = std::function<void(std::span<float> out)>;

/// Computes the tensor of an op straight into a new message to the neighbour and sends it.
/// `end_s` is the op's end, the send time: given in virtual and dry time, measured once
/// `compute` returns in wall time. The header carries the send and arrival times: virtual
/// and dry time ask the link model (and the pipes of shared links, pipe_sync); wall time
/// with shaped links asks the link model in real seconds and the message leaves by a timer
/// when its last part would have arrived; wall time without shaping sends at once and
/// leaves the arrival to the receiver. Dry mode sends the header alone.
void send_tensor(stage_self self, tensor_role role, int micro, double& end_s,
                 const compute_fn& compute);

/// Wall mode without shaping: the transfer ends when it is here, so the receiver sets its
/// arrival now and reports it (as sent by the neighbour, over the neighbour's parts).
void report_arrival(stage_self self, accepted_tensor& t);

} // namespace deepcee::actors
